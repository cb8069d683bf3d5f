// Connection authentication: before anything else is read from a new
// connection, both ends prove they know the communicator's 128-bit secret.
//
//   acceptor  -> connector : nonce_a (16 random bytes)
//   connector -> acceptor  : hello (16) || nonce_c (16) || MAC('C' || nonce_a || hello || nonce_c)
//   acceptor  -> connector : MAC('A' || nonce_c || hello || nonce_a)
//
// MAC = SipHash-2-4-128 keyed with the secret. Fresh nonces defeat replay;
// the leading label keeps one direction's MAC from being reflected as the
// other's. The acceptor checks the MAC before looking at the hello.
#pragma once

#include <cstdint>
#include <string>

#include "base/deadline.h"
#include "base/status.h"
#include "transports/socket/socket.h"

namespace chorus {

enum class ConnectionPurpose : uint16_t {
  kRendezvous = 1,  // a rank joining the bootstrap root
  kTcpLane = 2,     // one socket ("lane") of the TCP transport
};

// What a connector says about itself, authenticated by the MAC.
struct Hello {
  ConnectionPurpose purpose = ConnectionPurpose::kRendezvous;
  int32_t rank = 0;
  int32_t lane = 0;
};

constexpr size_t kSecretBytes = 16;
// Message sizes of the exchange above.
constexpr size_t kHandshakeChallengeBytes = 16;  // nonce_a
constexpr size_t kHandshakeReplyBytes = 48;      // hello || nonce_c || MAC
constexpr size_t kHandshakeAnswerBytes = 16;     // the acceptor's MAC

// The acceptor's side as steps, for an acceptor that drives many connections
// at once (handshake_acceptor.h): a fresh challenge, then the check of the
// connector's reply to it, which yields the hello and the answer to send.
// Fails on a wrong MAC, a foreign protocol, or a purpose other than `expected`.
Status NewHandshakeChallenge(uint8_t challenge[kHandshakeChallengeBytes]);
Status CheckHandshakeReply(const uint8_t secret[kSecretBytes], ConnectionPurpose expected,
                           const uint8_t challenge[kHandshakeChallengeBytes],
                           const uint8_t reply[kHandshakeReplyBytes], const std::string& peer_name, Hello* hello,
                           uint8_t answer[kHandshakeAnswerBytes]);

// Acceptor side. Fails (the caller drops the connection) on a wrong MAC, a
// foreign protocol, or a purpose other than `expected`.
Status AcceptHandshake(const Socket& socket, const uint8_t secret[kSecretBytes], ConnectionPurpose expected,
                       Deadline deadline, Hello* hello);

// Connector side. Fails if the acceptor drops us (it thinks our secret is
// wrong) or cannot prove the secret itself.
Status ConnectHandshake(const Socket& socket, const uint8_t secret[kSecretBytes], const Hello& hello,
                        Deadline deadline);

// One WARN line on stderr for a dropped connection (no logger below src/).
void WarnDroppedConnection(const std::string& where, const Status& why);

}  // namespace chorus
