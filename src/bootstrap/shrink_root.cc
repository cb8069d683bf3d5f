// The shrink root: the lowest live rank. It decides the survivor set (ranks
// that joined, minus those whose connection closed before the answer) and
// answers every member with the same table.
#include <poll.h>

#include <algorithm>

#include "base/log.h"
#include "bootstrap/rendezvous_protocol.h"
#include "bootstrap/shrink_protocol.h"
#include "transports/socket/handshake.h"

namespace chorus::shrink {
namespace {

enum class Member { kUnknown, kJoined, kDead };

constexpr int kAcceptSliceMs = 50;
constexpr int kProbeEveryMs = 100;

Deadline Sooner(Deadline a, Deadline b) { return a.time_point() < b.time_point() ? a : b; }

// True when the joiner hung up (it sends nothing after its request, so any
// readable event is EOF or an error).
bool HungUp(const Socket& socket) {
  pollfd entry = {socket.fd(), POLLIN | POLLRDHUP, 0};
  return ::poll(&entry, 1, 0) > 0;
}

class ShrinkRoot {
 public:
  ShrinkRoot(RecoveryEndpoint& endpoint, Deadline gather_deadline, Deadline deadline)
      : endpoint_(endpoint),
        gather_deadline_(gather_deadline),
        deadline_(deadline),
        members_(endpoint.nranks, Member::kUnknown),
        sockets_(endpoint.nranks) {
    for (int rank = 0; rank < endpoint.rank; ++rank) members_[rank] = Member::kDead;
    members_[endpoint.rank] = Member::kJoined;
  }

  Status Run(ShrinkOutcome* outcome) {
    Gather();
    Table table;
    for (int rank = 0; rank < endpoint_.nranks; ++rank) {
      if (members_[rank] == Member::kJoined && rank != endpoint_.rank && HungUp(sockets_[rank])) {
        members_[rank] = Member::kDead;  // died after joining
      }
      if (members_[rank] == Member::kJoined) table.survivors.push_back(rank);
    }
    CHORUS_RETURN_IF_ERROR(FillRandom(table.nonce, sizeof(table.nonce)));
    UniqueIdContents id;
    DeriveSecret(endpoint_.secret, table.nonce, id.secret);
    // The new rendezvous lives until the shrink deadline (at least a second).
    Status started = StartRendezvousRootWithSecret(endpoint_.ifname, id.secret,
                                                   std::max(1000, deadline_.RemainingMs()), &id);
    if (!started.ok()) {
      AnswerAll(started.code(), started.message());
      return started;
    }
    table.root_address = id.root_address;
    CHORUS_INFO("SHRINK", "rank ", endpoint_.rank, " is the shrink root: ", table.survivors.size(), " of ",
                endpoint_.nranks, " ranks survive");
    AnswerAll(chorusSuccess, EncodeTable(table));
    outcome->survivors = table.survivors;
    outcome->new_rank = 0;  // the root is the lowest survivor
    outcome->id = id;
    return Status::Ok();
  }

 private:
  bool Decided() const {
    return std::none_of(members_.begin(), members_.end(), [](Member m) { return m == Member::kUnknown; });
  }

  // Until every rank has joined or is dead, or the gather deadline passes.
  void Gather() {
    Deadline next_probe = Deadline::AfterMs(0);
    while (!Decided() && !gather_deadline_.Expired()) {
      Socket socket;
      Status accepted = endpoint_.listener.Accept(Sooner(gather_deadline_, Deadline::AfterMs(kAcceptSliceMs)), &socket);
      if (accepted.ok()) {
        Admit(std::move(socket));
      } else if (accepted.code() != chorusTimeout) {
        CHORUS_WARN("SHRINK", "rank ", endpoint_.rank, ": accept failed: ", accepted.message());
      }
      if (next_probe.Expired()) {
        ProbeUnknown();
        next_probe = Deadline::AfterMs(kProbeEveryMs);
      }
    }
  }

  // Authenticates one connection and reads its join request. Stale
  // connections (abandoned probes and joins) fail here and are dropped.
  void Admit(Socket socket) {
    const Deadline quick = Sooner(gather_deadline_, Deadline::AfterMs(rendezvous::kPerConnectionTimeoutMs));
    Hello hello;
    Status status = AcceptHandshake(socket, endpoint_.secret, ConnectionPurpose::kRendezvous, quick, &hello);
    uint8_t request[kJoinBytes];
    if (status.ok()) status = socket.RecvAll(request, sizeof(request), quick);
    if (!status.ok()) {
      CHORUS_TRACE("SHRINK", "rank ", endpoint_.rank, ": dropped a connection: ", status.message());
      return;
    }
    const int rank = static_cast<int32_t>(rendezvous::GetU32(request + 4));
    const int nranks = static_cast<int32_t>(rendezvous::GetU32(request + 8));
    Status valid;
    if (rendezvous::GetU32(request) != kJoinMagic || rank != hello.rank) {
      valid = InvalidUsage("malformed shrink request from ", socket.peer_name());
    } else if (nranks != endpoint_.nranks || rank <= endpoint_.rank || rank >= nranks) {
      valid = InvalidUsage("shrink root rank ", endpoint_.rank, " of ", endpoint_.nranks, " ranks cannot take rank ",
                           rank, " of ", nranks, " (different communicators, or a lower rank is unreachable "
                           "from the root only)");
    }
    if (!valid.ok()) {
      SendReply(socket, valid.code(), valid.message(), quick).IgnoreError();
      return;
    }
    socket.set_peer_name(StrCat("rank ", rank, " (", socket.peer_name(), ")"));
    members_[rank] = Member::kJoined;
    sockets_[rank] = std::move(socket);  // a rejoin replaces an abandoned one
  }

  void ProbeUnknown() {
    for (int rank = 0; rank < endpoint_.nranks && !gather_deadline_.Expired(); ++rank) {
      if (members_[rank] != Member::kUnknown) continue;
      bool alive = false;
      Socket probe;
      Status status = Probe(endpoint_.addresses[rank], gather_deadline_, &alive, &probe);
      if (status.ok() && !alive) members_[rank] = Member::kDead;
    }
  }

  void AnswerAll(chorusResult_t code, const std::string& body) {
    for (int rank = 0; rank < endpoint_.nranks; ++rank) {
      if (rank == endpoint_.rank || !sockets_[rank].valid()) continue;
      if (members_[rank] != Member::kJoined) continue;
      Status sent = SendReply(sockets_[rank], code, body, deadline_);
      // Its process died after the check: the new communicator's rendezvous
      // then fails for everyone, bounded by its timeout.
      if (!sent.ok()) CHORUS_WARN("SHRINK", "rank ", endpoint_.rank, ": answering: ", sent.message());
    }
  }

  RecoveryEndpoint& endpoint_;
  const Deadline gather_deadline_;
  const Deadline deadline_;
  std::vector<Member> members_;
  std::vector<Socket> sockets_;
};

}  // namespace

Status ServeAsRoot(RecoveryEndpoint& endpoint, Deadline gather_deadline, Deadline deadline, ShrinkOutcome* outcome) {
  return ShrinkRoot(endpoint, gather_deadline, deadline).Run(outcome);
}

}  // namespace chorus::shrink
