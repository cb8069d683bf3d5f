// A connection as the rendezvous root's HandshakeAcceptor sees it, over
// loopback: it sends the challenge, and the input is the connector's answer
// (hello, nonce, MAC: raw, or sealed with a valid MAC so that the hello and
// the request behind it are reached) followed by the request bytes, which
// the root's framing (rendezvous::FrameRequest) reads, then EOF.
#include <sys/socket.h>

#include <fuzzer/FuzzedDataProvider.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/siphash.h"
#include "bootstrap/rendezvous_protocol.h"
#include "fuzz_check.h"
#include "transports/socket/handshake_acceptor.h"

namespace chorus {
namespace {

constexpr uint8_t kSecret[16] = {'f', 'u', 'z', 'z', '-', 'a', 'c', 'c', 'e', 'p', 't', 'o', 'r', 0, 0, 1};
constexpr int kStepMs = 20;
constexpr int kMaxSteps = 100;

struct Root {
  Socket listener;
  SocketAddress address;
  std::unique_ptr<HandshakeAcceptor> acceptor;
};

Root& TheRoot() {
  // One listener for every input: a fresh one per input would exhaust ports.
  static Root* root = [] {
    auto* made = new Root;
    SocketAddress any;
    FUZZ_CHECK(ParseSocketAddress("127.0.0.1:0", &any).ok());
    FUZZ_CHECK(Socket::Listen(any, &made->listener).ok());
    FUZZ_CHECK(made->listener.LocalAddress(&made->address).ok());
    AcceptorOptions options;
    options.purpose = ConnectionPurpose::kRendezvous;
    options.where = "fuzz root";
    options.framing = rendezvous::FrameRequest;
    options.on_drop = [](const Status&) {};
    made->acceptor = std::make_unique<HandshakeAcceptor>(made->listener, kSecret, options);
    return made;
  }();
  return *root;
}

// Drives the acceptor, which holds the connection, until nothing is
// pending (it was admitted or dropped) or kMaxSteps passed.
void Serve(Root& root, std::vector<AdmittedConnection>* admitted) {
  for (int step = 0; step < kMaxSteps; ++step) {
    FUZZ_CHECK(root.acceptor->Admit(Deadline::AfterMs(kStepMs), admitted).ok());
    if (root.acceptor->pending() == 0) return;
  }
}

}  // namespace
}  // namespace chorus

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chorus;
  Root& root = TheRoot();
  FuzzedDataProvider input(data, size);
  const bool sealed = input.ConsumeBool();
  uint8_t reply[kHandshakeReplyBytes] = {};
  input.ConsumeData(reply, sizeof(reply));
  const std::string request = input.ConsumeRemainingBytesAsString();

  Socket client;
  FUZZ_CHECK(Socket::Connect(root.address, Deadline::AfterMs(5000), &client).ok());
  std::vector<AdmittedConnection> admitted;
  uint8_t challenge[kHandshakeChallengeBytes];
  // Accept, and receive the challenge.
  for (int step = 0; step < kMaxSteps; ++step) {
    FUZZ_CHECK(root.acceptor->Admit(Deadline::AfterMs(kStepMs), &admitted).ok());
    if (root.acceptor->pending() > 0) break;
  }
  FUZZ_CHECK(client.RecvAll(challenge, sizeof(challenge), Deadline::AfterMs(5000)).ok());
  if (sealed) {
    // The connector's MAC as handshake.h specifies it.
    uint8_t message[1 + 16 + 16 + 16];
    message[0] = 'C';
    std::memcpy(message + 1, challenge, 16);
    std::memcpy(message + 17, reply, 32);
    SipHash128(kSecret, message, sizeof(message), reply + 32);
  }
  std::string bytes(reinterpret_cast<const char*>(reply), sizeof(reply));
  bytes += request;
  // The peer may drop us before reading everything: a failed send is fine.
  ::send(client.fd(), bytes.data(), bytes.size(), MSG_NOSIGNAL);
  ::shutdown(client.fd(), SHUT_WR);
  Serve(root, &admitted);
  FUZZ_CHECK(root.acceptor->pending() == 0);
  for (const AdmittedConnection& connection : admitted) {
    // Only an authenticated, completely framed request is handed over.
    FUZZ_CHECK(sealed);
    FUZZ_CHECK(connection.hello.purpose == ConnectionPurpose::kRendezvous);
    FUZZ_CHECK(connection.request.size() >= rendezvous::kRequestHeaderBytes);
    size_t more = 1;
    FUZZ_CHECK(rendezvous::FrameRequest(connection.request, &more).ok() && more == 0);
    FUZZ_CHECK(request.compare(0, connection.request.size(), connection.request) == 0);
  }
  return 0;
}
