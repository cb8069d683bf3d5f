// The rendezvous root: a detached thread that owns its listener, serves one
// rendezvous of nranks ranks and exits when it is done or its timeout passes.
// A rule violation (bad rank, duplicate, disagreeing nranks) is answered to
// every rank that has joined or joins later, so nobody waits for a table
// that will never come. Connections authenticate concurrently
// (HandshakeAcceptor): a stranger that stays silent delays nobody.
#include <algorithm>
#include <cstring>
#include <future>
#include <memory>
#include <system_error>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/rendezvous_protocol.h"
#include "transports/socket/handshake.h"
#include "transports/socket/handshake_acceptor.h"
#include "transports/socket/interface.h"
#include "transports/socket/socket.h"

namespace chorus {
namespace {

using namespace rendezvous;

constexpr int kListenerRetryMs = 10;

struct Joiner {
  Socket socket;
  int rank = -1;
  int nranks = 0;
  std::string blob;
};

AcceptorOptions RootAcceptorOptions() {
  AcceptorOptions options;
  options.purpose = ConnectionPurpose::kRendezvous;
  options.where = "rendezvous root";
  options.budget_ms = kPerConnectionTimeoutMs;
  options.framing = FrameRequest;
  return options;
}

class RendezvousRoot {
 public:
  RendezvousRoot(Socket listener, const uint8_t secret[16], int timeout_ms)
      : listener_(std::move(listener)),
        deadline_(Deadline::AfterMs(timeout_ms)),
        acceptor_(listener_, secret, RootAcceptorOptions()) {}

  // Serves the rendezvous; `finished` is set when the root is done with it.
  void Serve() {
    ServeUntilDone();
    finished_.set_value();
  }

  std::shared_future<void> finished() { return finished_.get_future().share(); }

 private:
  void ServeUntilDone() {
    std::vector<AdmittedConnection> admitted;
    while (expected_ == 0 || answered_ + static_cast<int>(joined_.size()) < expected_) {
      if (deadline_.Expired()) {
        Fail(TimeoutError("rendezvous root timed out: ", joined_.size(), " of ", expected_, " ranks joined",
                          MissingRanks()));
        return;
      }
      admitted.clear();
      Status status = acceptor_.Admit(deadline_, &admitted);
      if (!status.ok()) {
        // The listener failed (e.g. out of descriptors): pause, do not spin.
        WarnDroppedConnection("rendezvous root", status);
        std::this_thread::sleep_for(std::chrono::milliseconds(std::min(kListenerRetryMs, deadline_.RemainingMs())));
      }
      for (AdmittedConnection& connection : admitted) {
        if (expected_ != 0 && answered_ + static_cast<int>(joined_.size()) >= expected_) break;
        Take(std::move(connection));
      }
    }
    if (failure_.ok()) SendTable();
  }

  // An authenticated, complete request: a joiner, or a rule violation.
  void Take(AdmittedConnection connection) {
    Joiner joiner;
    Status status = Parse(std::move(connection), &joiner);
    if (!status.ok()) {
      WarnDroppedConnection("rendezvous root", status);
      return;
    }
    if (!failure_.ok()) {
      Reply(joiner.socket, failure_);
      ++answered_;
      return;
    }
    status = Validate(joiner);
    joined_.push_back(std::move(joiner));
    if (!status.ok()) Fail(status);
    // As many members as the job has may connect from one host at once.
    if (expected_ > 0) acceptor_.set_max_pending_per_source(std::max(kMaxPendingPerSource, expected_));
  }

  // The request's fields, framed by FrameRequest.
  Status Parse(AdmittedConnection connection, Joiner* joiner) {
    const auto* header = reinterpret_cast<const uint8_t*>(connection.request.data());
    joiner->rank = static_cast<int32_t>(GetU32(header + 4));
    joiner->nranks = static_cast<int32_t>(GetU32(header + 8));
    if (connection.hello.rank != joiner->rank) {
      return InvalidUsage("rendezvous request from ", connection.socket.peer_name(), " claims rank ", joiner->rank,
                          " after a handshake as rank ", connection.hello.rank);
    }
    joiner->blob = connection.request.substr(kRequestHeaderBytes);
    connection.socket.set_peer_name(StrCat("rank ", joiner->rank, " (", connection.socket.peer_name(), ")"));
    joiner->socket = std::move(connection.socket);
    return Status::Ok();
  }

  Status Validate(const Joiner& joiner) {
    if (joiner.nranks < 1 || joiner.rank < 0 || joiner.rank >= joiner.nranks) {
      return InvalidArgument("rendezvous: rank ", joiner.rank, " is out of range for ", joiner.nranks, " ranks");
    }
    if (expected_ == 0) {
      expected_ = joiner.nranks;
      seen_.assign(expected_, false);
    }
    if (joiner.nranks != expected_) {
      Status status = InvalidUsage("rendezvous: rank ", joiner.rank, " says there are ", joiner.nranks,
                                   " ranks, but an earlier rank said ", expected_);
      // The true size is unknown now: answer as many ranks as the smaller
      // claim, so the root (and the process hosting it) does not wait for
      // ranks that may not exist.
      expected_ = std::min(expected_, joiner.nranks);
      return status;
    }
    if (seen_[joiner.rank]) {
      return InvalidUsage("rendezvous: rank ", joiner.rank, " joined twice (duplicate rank)");
    }
    seen_[joiner.rank] = true;
    return Status::Ok();
  }

  std::string MissingRanks() const {
    std::string missing;
    int listed = 0;
    for (int rank = 0; rank < static_cast<int>(seen_.size()); ++rank) {
      if (seen_[rank]) continue;
      if (++listed > 16) return missing + ", ...)";
      missing += StrCat(missing.empty() ? "; missing ranks: " : ", ", rank);
    }
    return missing;
  }

  // Answers `why` to every joined rank; later joiners get it too.
  void Fail(const Status& why) {
    failure_ = why;
    for (Joiner& joiner : joined_) Reply(joiner.socket, why);
    answered_ += static_cast<int>(joined_.size());
    joined_.clear();
    if (expected_ == 0) expected_ = 1;  // nothing to wait for but the deadline
  }

  void Reply(const Socket& socket, const Status& status) {
    const std::string& body = status.message();
    uint8_t header[kReplyHeaderBytes];
    PutU32(header, static_cast<uint32_t>(status.code()));
    PutU64(header + 4, body.size());
    const Deadline quick = Sooner(deadline_, Deadline::AfterMs(kPerConnectionTimeoutMs));
    Status sent = socket.SendAll(header, sizeof(header), quick);
    if (sent.ok()) sent = socket.SendAll(body.data(), body.size(), quick);
    if (!sent.ok()) WarnDroppedConnection("rendezvous root", sent);
  }

  void SendTable() {
    std::vector<const Joiner*> by_rank(expected_);
    for (const Joiner& joiner : joined_) by_rank[joiner.rank] = &joiner;
    std::string table;
    for (const Joiner* joiner : by_rank) {
      uint8_t length[4];
      PutU32(length, static_cast<uint32_t>(joiner->blob.size()));
      table.append(reinterpret_cast<const char*>(length), sizeof(length));
      table += joiner->blob;
    }
    for (const Joiner& joiner : joined_) Reply(joiner.socket, Status(chorusSuccess, table));
  }

  Socket listener_;
  Deadline deadline_;
  HandshakeAcceptor acceptor_;
  int expected_ = 0;  // nranks, once the first valid rank said it
  int answered_ = 0;  // connections already answered with failure_
  std::vector<bool> seen_;
  std::vector<Joiner> joined_;
  Status failure_;
  std::promise<void> finished_;
};

Status StartServing(Socket listener, const uint8_t secret[16], int timeout_ms,
                    std::shared_future<void>* finished) {
  auto root = std::make_shared<RendezvousRoot>(std::move(listener), secret, timeout_ms);
  if (finished != nullptr) *finished = root->finished();
  try {
    std::thread([root] { root->Serve(); }).detach();
  } catch (const std::system_error& error) {
    return SystemError("cannot start the rendezvous root thread: ", error.what());
  }
  return Status::Ok();
}

}  // namespace

Status StartRendezvousRoot(const std::string& ifname, int timeout_ms, UniqueIdContents* contents) {
  uint8_t secret[16];
  CHORUS_RETURN_IF_ERROR(FillRandom(secret, sizeof(secret)));
  return StartRendezvousRootWithSecret(ifname, secret, timeout_ms, contents);
}

Status StartRendezvousRootWithSecret(const std::string& ifname, const uint8_t secret[16], int timeout_ms,
                                     UniqueIdContents* contents) {
  NetworkInterface chosen;
  CHORUS_RETURN_IF_ERROR(FindInterface(ifname, &chosen));
  Socket listener;
  CHORUS_RETURN_IF_ERROR(Socket::Listen(chosen.address, &listener));
  SocketAddress bound;
  CHORUS_RETURN_IF_ERROR(listener.LocalAddress(&bound));
  std::memcpy(contents->secret, secret, sizeof(contents->secret));
  contents->root_address = bound.ToString();
  return StartServing(std::move(listener), contents->secret, timeout_ms, nullptr);
}

Status StartRendezvousRootAt(const UniqueIdContents& contents, int timeout_ms, std::shared_future<void>* finished) {
  SocketAddress address;
  CHORUS_RETURN_IF_ERROR(ParseSocketAddress(contents.root_address, &address));
  // Listen on every interface at that port: a MASTER_ADDR host name may
  // resolve differently here (127.0.1.1 on Debian) than on the other hosts.
  SocketAddress any;
  any.storage.ss_family = static_cast<sa_family_t>(address.family());
  any.length = address.length;
  any.set_port(address.port());
  Socket listener;
  CHORUS_RETURN_IF_ERROR(Socket::Listen(any, &listener));
  return StartServing(std::move(listener), contents.secret, timeout_ms, finished);
}

}  // namespace chorus
