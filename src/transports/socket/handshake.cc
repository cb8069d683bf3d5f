#include "transports/socket/handshake.h"

#include "base/log.h"

#include <cstdio>
#include <cstring>

#include "base/siphash.h"

namespace chorus {
namespace {

constexpr uint32_t kHelloMagic = 0x43485253;  // "CHRS"
constexpr uint16_t kProtocolVersion = 1;
constexpr size_t kNonceBytes = 16;
constexpr size_t kMacBytes = 16;
constexpr size_t kHelloBytes = 16;

void PutU32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (8 * i));
}
void PutU16(uint8_t* p, uint16_t v) {
  for (int i = 0; i < 2; ++i) p[i] = uint8_t(v >> (8 * i));
}
uint32_t GetU32(const uint8_t* p) { return p[0] | p[1] << 8 | p[2] << 16 | uint32_t(p[3]) << 24; }
uint16_t GetU16(const uint8_t* p) { return uint16_t(p[0] | p[1] << 8); }

// Little-endian: magic u32, version u16, purpose u16, rank i32, lane i32.
void EncodeHello(const Hello& hello, uint8_t out[kHelloBytes]) {
  PutU32(out, kHelloMagic);
  PutU16(out + 4, kProtocolVersion);
  PutU16(out + 6, static_cast<uint16_t>(hello.purpose));
  PutU32(out + 8, static_cast<uint32_t>(hello.rank));
  PutU32(out + 12, static_cast<uint32_t>(hello.lane));
}

void Mac(const uint8_t secret[kSecretBytes], char label, const uint8_t* first_nonce, const uint8_t* hello,
         const uint8_t* second_nonce, uint8_t out[kMacBytes]) {
  uint8_t message[1 + kNonceBytes + kHelloBytes + kNonceBytes];
  message[0] = static_cast<uint8_t>(label);
  std::memcpy(message + 1, first_nonce, kNonceBytes);
  std::memcpy(message + 1 + kNonceBytes, hello, kHelloBytes);
  std::memcpy(message + 1 + kNonceBytes + kHelloBytes, second_nonce, kNonceBytes);
  SipHash128(secret, message, sizeof(message), out);
}

// Constant time, so a forger learns nothing from how long a rejection takes.
bool MacsEqual(const uint8_t* a, const uint8_t* b) {
  uint8_t difference = 0;
  for (size_t i = 0; i < kMacBytes; ++i) difference |= a[i] ^ b[i];
  return difference == 0;
}

}  // namespace

Status NewHandshakeChallenge(uint8_t challenge[kHandshakeChallengeBytes]) {
  return FillRandom(challenge, kHandshakeChallengeBytes);
}

Status CheckHandshakeReply(const uint8_t secret[kSecretBytes], ConnectionPurpose expected,
                           const uint8_t challenge[kHandshakeChallengeBytes],
                           const uint8_t reply[kHandshakeReplyBytes], const std::string& peer_name, Hello* hello,
                           uint8_t answer[kHandshakeAnswerBytes]) {
  static_assert(kHandshakeChallengeBytes == kNonceBytes && kHandshakeAnswerBytes == kMacBytes &&
                kHandshakeReplyBytes == kHelloBytes + kNonceBytes + kMacBytes);
  const uint8_t* nonce_a = challenge;
  const uint8_t* hello_bytes = reply;
  const uint8_t* nonce_c = reply + kHelloBytes;
  uint8_t expected_mac[kMacBytes];
  Mac(secret, 'C', nonce_a, hello_bytes, nonce_c, expected_mac);
  if (!MacsEqual(expected_mac, reply + kHelloBytes + kNonceBytes)) {
    return InvalidUsage("connection from ", peer_name,
                        " failed authentication (it does not know the communicator secret)");
  }
  // Authenticated: the hello may now be trusted to be well-formed Chorus.
  if (GetU32(hello_bytes) != kHelloMagic || GetU16(hello_bytes + 4) != kProtocolVersion) {
    return InvalidUsage("connection from ", peer_name, " speaks protocol version ", GetU16(hello_bytes + 4),
                        ", expected ", kProtocolVersion);
  }
  const auto purpose = static_cast<ConnectionPurpose>(GetU16(hello_bytes + 6));
  if (purpose != expected) {
    return InvalidUsage("connection from ", peer_name, " has purpose ", static_cast<int>(purpose), ", expected ",
                        static_cast<int>(expected));
  }
  hello->purpose = purpose;
  hello->rank = static_cast<int32_t>(GetU32(hello_bytes + 8));
  hello->lane = static_cast<int32_t>(GetU32(hello_bytes + 12));
  Mac(secret, 'A', nonce_c, hello_bytes, nonce_a, answer);
  return Status::Ok();
}

Status AcceptHandshake(const Socket& socket, const uint8_t secret[kSecretBytes], ConnectionPurpose expected,
                       Deadline deadline, Hello* hello) {
  uint8_t challenge[kHandshakeChallengeBytes];
  CHORUS_RETURN_IF_ERROR(NewHandshakeChallenge(challenge));
  CHORUS_RETURN_IF_ERROR(socket.SendAll(challenge, sizeof(challenge), deadline));
  uint8_t reply[kHandshakeReplyBytes];
  CHORUS_RETURN_IF_ERROR(socket.RecvAll(reply, sizeof(reply), deadline));
  uint8_t answer[kHandshakeAnswerBytes];
  CHORUS_RETURN_IF_ERROR(CheckHandshakeReply(secret, expected, challenge, reply, socket.peer_name(), hello, answer));
  return socket.SendAll(answer, sizeof(answer), deadline);
}

Status ConnectHandshake(const Socket& socket, const uint8_t secret[kSecretBytes], const Hello& hello,
                        Deadline deadline) {
  uint8_t nonce_a[kNonceBytes];
  CHORUS_RETURN_IF_ERROR(socket.RecvAll(nonce_a, sizeof(nonce_a), deadline));
  uint8_t message[kHelloBytes + kNonceBytes + kMacBytes];
  uint8_t* hello_bytes = message;
  uint8_t* nonce_c = message + kHelloBytes;
  EncodeHello(hello, hello_bytes);
  CHORUS_RETURN_IF_ERROR(FillRandom(nonce_c, kNonceBytes));
  Mac(secret, 'C', nonce_a, hello_bytes, nonce_c, message + kHelloBytes + kNonceBytes);
  CHORUS_RETURN_IF_ERROR(socket.SendAll(message, sizeof(message), deadline));

  uint8_t answer[kMacBytes];
  Status received = socket.RecvAll(answer, sizeof(answer), deadline);
  if (received.code() == chorusRemoteError) {
    return RemoteError(socket.peer_name(), " dropped the connection during the handshake (wrong secret?)");
  }
  CHORUS_RETURN_IF_ERROR(received);
  uint8_t expected[kMacBytes];
  Mac(secret, 'A', nonce_c, hello_bytes, nonce_a, expected);
  if (!MacsEqual(expected, answer)) {
    return InvalidUsage(socket.peer_name(),
                        " failed authentication (it does not know the "
                        "communicator secret)");
  }
  return Status::Ok();
}

void WarnDroppedConnection(const std::string& where, const Status& why) {
  CHORUS_WARN("NET", where, ": dropped a connection: ", why.message());
}

}  // namespace chorus
