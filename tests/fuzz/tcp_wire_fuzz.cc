// The TCP transport's inbound bytes: a lane (TcpLane) with fuzzed posted
// receives reading a fuzzed stream from a socket pair (24-byte wire header
// checked against the posted receive, then the payload), and the
// acceptor's check of a connector's handshake reply (CheckHandshakeReply),
// raw and sealed with a valid MAC so that the hello behind it is reached.
#include <sys/socket.h>

#include <fuzzer/FuzzedDataProvider.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/siphash.h"
#include "fuzz_check.h"
#include "transports/socket/handshake.h"
#include "transports/tcp/tcp_lane.h"

namespace chorus {
namespace {

constexpr size_t kMaxRequests = 4;
constexpr size_t kMaxMessageBytes = 4096;

void FuzzLane(FuzzedDataProvider& input) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0) return;
  Socket writer(fds[1], "fuzz sender");
  TcpLane lane(Socket(fds[0], "fuzz receiver"), "peer 1 (fuzz)");

  const size_t count = input.ConsumeIntegralInRange<size_t>(1, kMaxRequests);
  std::vector<std::vector<uint8_t>> buffers(count);
  std::vector<TransferRequest> requests(count);
  for (size_t i = 0; i < count; ++i) {
    requests[i].tag = input.ConsumeIntegralInRange<uint64_t>(0, 3);
    requests[i].bytes = input.ConsumeIntegralInRange<size_t>(0, kMaxMessageBytes);
    buffers[i].resize(requests[i].bytes);
    requests[i].buffer = buffers[i].data();
  }
  for (TransferRequest& request : requests) lane.PushRecv(&request);

  const std::string stream = input.ConsumeRemainingBytesAsString();
  const ssize_t sent = ::send(writer.fd(), stream.data(), stream.size(), MSG_NOSIGNAL);
  if (sent != static_cast<ssize_t>(stream.size())) return;
  writer = Socket();  // EOF after the stream

  // Until it fails (corrupt header, EOF with receives pending) or is done.
  Status status;
  for (int round = 0; round < 64 && status.ok() && !lane.idle(); ++round) {
    lane.OnEvents(0x001 /* EPOLLIN */);
    bool progressed = false;
    status = lane.Progress(&progressed);
    if (!progressed) break;
  }
  // Every completed receive holds its message's payload from the stream.
  size_t at = 0;
  for (size_t i = 0; i < count && requests[i].done; ++i) {
    FUZZ_CHECK(at + sizeof(WireHeader) + requests[i].bytes <= stream.size());
    FUZZ_CHECK(requests[i].bytes == 0 ||
               std::memcmp(buffers[i].data(), stream.data() + at + sizeof(WireHeader), requests[i].bytes) == 0);
    at += sizeof(WireHeader) + requests[i].bytes;
  }
}

// The connector's MAC as handshake.h specifies it: SipHash-128 under the
// secret of 'C' || nonce_a || hello || nonce_c.
void SealReply(const uint8_t secret[16], const uint8_t challenge[16], uint8_t reply[48]) {
  uint8_t message[1 + 16 + 16 + 16];
  message[0] = 'C';
  std::memcpy(message + 1, challenge, 16);
  std::memcpy(message + 17, reply, 16);
  std::memcpy(message + 33, reply + 16, 16);
  SipHash128(secret, message, sizeof(message), reply + 32);
}

void FuzzHandshake(FuzzedDataProvider& input) {
  uint8_t secret[kSecretBytes] = {};
  uint8_t challenge[kHandshakeChallengeBytes] = {};
  uint8_t reply[kHandshakeReplyBytes] = {};
  const bool sealed = input.ConsumeBool();
  const auto expected = input.ConsumeBool() ? ConnectionPurpose::kRendezvous : ConnectionPurpose::kTcpLane;
  input.ConsumeData(secret, sizeof(secret));
  input.ConsumeData(challenge, sizeof(challenge));
  input.ConsumeData(reply, sizeof(reply));
  if (sealed) SealReply(secret, challenge, reply);
  Hello hello;
  uint8_t answer[kHandshakeAnswerBytes];
  const Status status = CheckHandshakeReply(secret, expected, challenge, reply, "fuzz peer", &hello, answer);
  if (status.ok()) FUZZ_CHECK(hello.purpose == expected);
  if (!sealed) return;
  // A sealed reply fails only on its hello: magic, version or purpose.
  const bool hello_valid = reply[0] == 'S' && reply[1] == 'R' && reply[2] == 'H' && reply[3] == 'C' &&
                           reply[4] == 1 && reply[5] == 0 && reply[6] == static_cast<uint8_t>(expected) &&
                           reply[7] == 0;
  FUZZ_CHECK(status.ok() == hello_valid);
}

}  // namespace
}  // namespace chorus

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider input(data, size);
  if (input.ConsumeBool()) {
    chorus::FuzzHandshake(input);
  } else {
    chorus::FuzzLane(input);
  }
  return 0;
}
