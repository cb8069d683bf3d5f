// The shrink root: the lowest rank that answers. It decides the survivor set
// (ranks that joined, minus those whose connection closed before the answer)
// and answers every member with the same table, unless a rank it asks says
// that a shrink was agreed without it, or the set leaves out live ranks
// without a majority (CheckMajority).
//
// A rank that answers "not shrinking now" shares an earlier agreement with
// the root: it is alive and holds the lineage (typically it is still failing
// to create the communicator of that agreement, whose root died). Leaving it
// out would let it, once every member of the new communicator has exited,
// find their listeners closed and form a communicator of its own: the root
// waits for it past the gather deadline, and fails naming it if it never
// comes.
#include <poll.h>

#include <algorithm>

#include "base/log.h"
#include "bootstrap/rendezvous_protocol.h"
#include "bootstrap/shrink_protocol.h"

namespace chorus::shrink {
namespace {

enum class Member {
  kUnknown,
  kComing,  // alive, agreed with us before, not shrinking yet: never left out
  kJoined,
  kDead,
};

constexpr int kAcceptSliceMs = 50;
constexpr int kProbeEveryMs = 100;

// True when the joiner hung up (it sends nothing after its request, so any
// readable event is EOF or an error).
bool HungUp(const Socket& socket) {
  pollfd entry = {socket.fd(), POLLIN | POLLRDHUP, 0};
  return ::poll(&entry, 1, 0) > 0;
}

class ShrinkRoot {
 public:
  ShrinkRoot(RecoveryEndpoint& endpoint, Deadline gather_deadline, Deadline deadline,
             const std::vector<bool>& gone_below)
      : endpoint_(endpoint),
        gather_deadline_(gather_deadline),
        deadline_(deadline),
        coming_deadline_(Midway(gather_deadline, deadline)),
        members_(endpoint.nranks, Member::kUnknown),
        gone_(endpoint.nranks, false),
        sockets_(endpoint.nranks),
        questions_(endpoint.nranks),
        connecting_(endpoint.nranks),
        connect_by_(endpoint.nranks, Deadline::AfterMs(0)),
        acceptor_(endpoint.listener, endpoint.secret, RequestAcceptorOptions(endpoint, "shrink root")) {
    // Ranks below were scanned by this one: gone, or passed over (alive,
    // silent). Neither is asked again.
    for (int rank = 0; rank < endpoint.rank; ++rank) {
      members_[rank] = Member::kDead;
      gone_[rank] = rank < static_cast<int>(gone_below.size()) && gone_below[rank];
    }
    members_[endpoint.rank] = Member::kJoined;
  }

  Status Run(ShrinkOutcome* outcome, std::vector<int>* left_out_of) {
    Gather();
    if (!left_out_of_.empty()) {
      // Our joiners were left out of it too; one that is a member of it
      // (shrinking the old communicator again) is sent to ask again.
      for (int rank = 0; rank < endpoint_.nranks; ++rank) {
        const bool member = std::binary_search(left_out_of_.begin(), left_out_of_.end(), rank);
        Answer(rank, member ? kReplyNotShrinking : kReplyLeftOut, EncodeRanks(left_out_of_));
      }
      *left_out_of = left_out_of_;
      return LeftOutError(endpoint_.rank, left_out_of_, told_by_);
    }
    if (conflict_.ok()) conflict_ = MissingMembers();
    if (!conflict_.ok()) {
      for (int rank = 0; rank < endpoint_.nranks; ++rank) Answer(rank, conflict_.code(), conflict_.message());
      return conflict_;
    }
    Table table;
    for (int rank = 0; rank < endpoint_.nranks; ++rank) {
      if (members_[rank] == Member::kJoined && rank != endpoint_.rank && HungUp(sockets_[rank])) {
        members_[rank] = Member::kDead;  // died after joining
      }
      if (members_[rank] == Member::kJoined) table.survivors.push_back(rank);
    }
    Status majority = CheckMajority(table.survivors, gone_, endpoint_.rank);
    if (!majority.ok()) {
      for (int rank = 0; rank < endpoint_.nranks; ++rank) Answer(rank, majority.code(), majority.message());
      return majority;
    }
    CHORUS_RETURN_IF_ERROR(FillRandom(table.nonce, sizeof(table.nonce)));
    UniqueIdContents id;
    DeriveSecret(endpoint_.secret, table.nonce, id.secret);
    // The new rendezvous lives until the shrink deadline (at least a second).
    Status started = StartRendezvousRootWithSecret(endpoint_.ifname, id.secret,
                                                   std::max(1000, deadline_.RemainingMs()), &id);
    if (!started.ok()) {
      for (int rank = 0; rank < endpoint_.nranks; ++rank) Answer(rank, started.code(), started.message());
      return started;
    }
    table.root_address = id.root_address;
    id.root_listening = true;
    CHORUS_INFO("SHRINK", "rank ", endpoint_.rank, " is the shrink root: ", table.survivors.size(), " of ",
                endpoint_.nranks, " ranks survive");
    const std::string body = EncodeTable(table);
    for (int rank = 0; rank < endpoint_.nranks; ++rank) Answer(rank, chorusSuccess, body);
    outcome->survivors = table.survivors;
    outcome->new_rank = 0;  // the root is the lowest survivor
    outcome->id = id;
    return Status::Ok();
  }

 private:
  static Deadline Midway(Deadline a, Deadline b) {
    return Deadline::AfterMs((a.RemainingMs() + b.RemainingMs()) / 2);
  }
  bool Any(Member state) const { return std::find(members_.begin(), members_.end(), state) != members_.end(); }
  bool Decided() const { return !Any(Member::kUnknown) && !Any(Member::kComing); }
  bool Stopped() const { return !left_out_of_.empty() || !conflict_.ok(); }
  // Gathering ends at the gather deadline, or later while a member of an
  // earlier agreement is still coming (answers must still reach every
  // joiner before its own deadline).
  bool GatherOver() const {
    return gather_deadline_.Expired() && (!Any(Member::kComing) || coming_deadline_.Expired());
  }

  // Until every rank has joined or is gone, or gathering is over, or a rank
  // says a shrink was agreed without us.
  void Gather() {
    Deadline next_probe = Deadline::AfterMs(0);
    while (!Decided() && !Stopped() && !GatherOver()) {
      const Deadline until = Any(Member::kComing) ? coming_deadline_ : gather_deadline_;
      if (next_probe.Expired()) {
        ProbeUnheard();
        next_probe = Deadline::AfterMs(kProbeEveryMs);
      }
      Serve(Sooner(Sooner(until, next_probe), Deadline::AfterMs(kAcceptSliceMs)), true);
    }
    // Answers that arrived with the deadline still count.
    if (!Decided() && !Stopped()) Serve(Deadline::AfterMs(0), false);
  }

  // A live member of an earlier agreement that never joined cannot be left
  // out (see the top of this file).
  Status MissingMembers() const {
    std::vector<int> coming;
    for (int rank = 0; rank < endpoint_.nranks; ++rank) {
      if (members_[rank] == Member::kComing) coming.push_back(rank);
    }
    if (coming.empty()) return Status::Ok();
    return TimeoutError("shrink root rank ", endpoint_.rank, ": ranks ", FormatRanks(coming),
                        " are alive and agreed with it in an earlier shrink of this communicator, but did not call "
                        "chorusCommShrink again before the deadline; a live member cannot be left out: call "
                        "chorusCommShrink on every survivor");
  }

  // Waits until `until` for joiners (when `accept`; they authenticate
  // concurrently, so strangers delay nobody) or an answer to one of our
  // questions, and handles what is ready.
  void Serve(Deadline until, bool accept) {
    std::vector<pollfd> entries;
    if (accept) acceptor_.AppendPollEntries(&entries);
    const size_t first_question = entries.size();
    std::vector<int> owners;
    for (int rank = 0; rank < endpoint_.nranks; ++rank) {
      if (!questions_[rank].valid()) continue;
      entries.push_back({questions_[rank].fd(), POLLIN, 0});
      owners.push_back(rank);
    }
    const size_t first_connecting = entries.size();
    std::vector<int> connecting;
    for (int rank = 0; rank < endpoint_.nranks; ++rank) {
      if (!connecting_[rank].valid()) continue;
      entries.push_back({connecting_[rank].fd(), POLLOUT, 0});
      connecting.push_back(rank);
    }
    if (entries.empty()) return;
    const int timeout_ms = accept ? acceptor_.PollTimeoutMs(until) : until.RemainingMs();
    if (::poll(entries.data(), entries.size(), timeout_ms) < 0) {
      for (pollfd& entry : entries) entry.revents = 0;  // EINTR: the caller loops
    }
    for (size_t i = 0; i < owners.size() && !Stopped(); ++i) {
      if (entries[first_question + i].revents != 0) Hear(owners[i]);
    }
    for (size_t i = 0; i < connecting.size(); ++i) {
      if (entries[first_connecting + i].revents != 0) Connected(connecting[i]);
    }
    if (!accept) return;
    std::vector<AdmittedConnection> admitted;
    Status handled = acceptor_.Handle(entries, &admitted);
    if (!handled.ok()) CHORUS_WARN("SHRINK", "rank ", endpoint_.rank, ": ", handled.message());
    for (AdmittedConnection& connection : admitted) {
      if (Stopped()) break;
      Admit(std::move(connection));
    }
  }

  // Takes one authenticated join request.
  void Admit(AdmittedConnection connection) {
    const Deadline quick = Sooner(gather_deadline_, Deadline::AfterMs(rendezvous::kPerConnectionTimeoutMs));
    int rank = -1;
    Status status = CheckRequest(endpoint_, connection, quick, &rank);
    if (!status.ok()) {
      CHORUS_TRACE("SHRINK", "rank ", endpoint_.rank, ": dropped a connection: ", status.message());
      return;
    }
    Socket& socket = connection.socket;
    if (rank < endpoint_.rank) {
      // We passed over it (alive but silent, or late), or it asks us as a
      // root itself: the shrink goes on without it, by a majority or not
      // at all.
      Status refused = RemoteError("shrink root rank ", endpoint_.rank, " cannot take rank ", rank,
                                   ", which is below it: rank ", endpoint_.rank, " found it gone or silent and "
                                   "passed over it");
      SendReply(socket, refused.code(), refused.message(), quick).IgnoreError();
      return;
    }
    socket.set_peer_name(StrCat("rank ", rank, " (", socket.peer_name(), ")"));
    members_[rank] = Member::kJoined;
    sockets_[rank] = std::move(socket);  // a rejoin replaces an abandoned one
    questions_[rank] = Socket();
    connecting_[rank] = Socket();
  }

  // Opens one question to every rank not yet joined nor gone that has none
  // open (refused: the rank is gone). The question stays queued on a rank
  // that is not answering its listener (not shrinking yet, or still joining
  // a root); the rank's responder answers it if a shrink was agreed there.
  // Connections are started here and completed in Serve, so an unreachable
  // host never keeps the root from answering its joiners. Only a refusal
  // makes a rank gone: one that does not connect (within kProbeWindowMs, or
  // no route) is tried again, and left out at the gather deadline only by a
  // majority, since it may live behind a partition.
  void ProbeUnheard() {
    for (int rank = 0; rank < endpoint_.nranks; ++rank) {
      if (!Unheard(rank) || questions_[rank].valid()) continue;
      if (connecting_[rank].valid()) {
        if (connect_by_[rank].Expired()) connecting_[rank] = Socket();  // unreachable: tried again
        continue;
      }
      Socket attempt;
      ProbeState state;
      if (!StartProbe(endpoint_.addresses[rank], &attempt, &state).ok()) continue;
      if (state == ProbeState::kGone) {
        MarkGone(rank);
      } else if (state == ProbeState::kUnreachable) {
        continue;  // perhaps alive behind a partition: tried again next round, never gone
      } else if (state == ProbeState::kPending) {
        connecting_[rank] = std::move(attempt);
        connect_by_[rank] = Deadline::AfterMs(kProbeWindowMs);
      } else {
        Ask(rank, std::move(attempt));
      }
    }
  }

  // A connection started by ProbeUnheard completed (or failed).
  void Connected(int rank) {
    Socket attempt = std::move(connecting_[rank]);
    ProbeState state;
    if (!FinishProbe(&attempt, &state).ok()) return;  // probed again next round
    if (state == ProbeState::kGone) {
      MarkGone(rank);
    } else if (state == ProbeState::kConnected && Unheard(rank)) {
      Ask(rank, std::move(attempt));
    }
  }

  void MarkGone(int rank) {
    members_[rank] = Member::kDead;
    gone_[rank] = true;
  }

  void Ask(int rank, Socket connected) {
    connected.set_peer_name(StrCat("rank ", rank, " (", connected.peer_name(), ")"));
    questions_[rank] = std::move(connected);
  }

  bool Unheard(int rank) const { return members_[rank] == Member::kUnknown || members_[rank] == Member::kComing; }

  // Our question to `rank` was accepted (or its connection failed).
  void Hear(int rank) {
    if (!questions_[rank].valid() || !Unheard(rank)) return;  // it joined meanwhile
    const Socket question = std::move(questions_[rank]);  // one question per connection
    const Deadline quick = Sooner(deadline_, Deadline::AfterMs(kAnswerMs));
    Status status = SendRequest(endpoint_, question, quick);
    Reply reply;
    if (status.ok()) status = ReadReply(question, quick, &reply);
    if (!status.ok()) {
      // Reset: its listener closed (the next probe tells); or it dropped us.
      CHORUS_TRACE("SHRINK", "rank ", endpoint_.rank, ": asking rank ", rank, ": ", status.message());
      return;
    }
    if (reply.code == kReplyNotShrinking) {
      // Shares an earlier agreement with us: asked again at the next probe.
      members_[rank] = Member::kComing;
      return;
    }
    if (reply.code == kReplyLeftOut) {
      std::vector<int> agreed;
      Status decoded = DecodeRanks(reply.body, endpoint_.nranks, &agreed);
      if (decoded.ok() && !std::binary_search(agreed.begin(), agreed.end(), endpoint_.rank)) {
        left_out_of_ = agreed;
        told_by_ = rank;
      } else if (!decoded.ok()) {
        conflict_ = decoded;
      }
      return;
    }
    // A root (or another error): two roots at once, which only a network
    // that hides some listeners from some ranks brings about.
    conflict_ = RemoteError("shrink root rank ", endpoint_.rank, " asked rank ", rank, ", which answered: ",
                            reply.body);
  }

  void Answer(int rank, uint32_t code, const std::string& body) {
    if (rank == endpoint_.rank || !sockets_[rank].valid() || members_[rank] != Member::kJoined) return;
    Status sent = SendReply(sockets_[rank], code, body, deadline_);
    // Its process died after the check: the new communicator's rendezvous
    // then fails for everyone, bounded by its timeout.
    if (!sent.ok()) CHORUS_WARN("SHRINK", "rank ", endpoint_.rank, ": answering: ", sent.message());
  }

  RecoveryEndpoint& endpoint_;
  const Deadline gather_deadline_;
  const Deadline deadline_;
  const Deadline coming_deadline_;  // the latest a member still coming is waited for
  std::vector<Member> members_;
  std::vector<bool> gone_;         // refused a connection: left the lineage for good
  std::vector<Socket> sockets_;    // joiners, waiting for the answer
  std::vector<Socket> questions_;  // open questions to ranks still unheard of
  std::vector<Socket> connecting_;  // probes of ranks still unheard of, not connected yet
  std::vector<Deadline> connect_by_;
  HandshakeAcceptor acceptor_;     // joiners authenticating
  std::vector<int> left_out_of_;   // a shrink agreed without us, as told by told_by_
  int told_by_ = -1;
  Status conflict_;
};

}  // namespace

Status ServeAsRoot(RecoveryEndpoint& endpoint, Deadline gather_deadline, Deadline deadline,
                   const std::vector<bool>& gone_below, ShrinkOutcome* outcome, std::vector<int>* left_out_of) {
  return ShrinkRoot(endpoint, gather_deadline, deadline, gone_below).Run(outcome, left_out_of);
}

Status CheckMajority(const std::vector<int>& survivors, const std::vector<bool>& gone, int root) {
  std::vector<int> absent;  // alive (never refused), not in the set
  int not_gone = 0, lowest = -1;
  for (int rank = 0; rank < static_cast<int>(gone.size()); ++rank) {
    if (gone[rank]) continue;
    ++not_gone;
    if (lowest < 0) lowest = rank;
    if (!std::binary_search(survivors.begin(), survivors.end(), rank)) absent.push_back(rank);
  }
  if (absent.empty()) return Status::Ok();
  const int size = static_cast<int>(survivors.size());
  if (2 * size > not_gone || (2 * size == not_gone && !survivors.empty() && survivors.front() == lowest)) {
    return Status::Ok();
  }
  return TimeoutError("shrink root rank ", root, ": ranks ", FormatRanks(absent),
                      " are alive or unreachable (their recovery listeners never refused a connection) but did not take part "
                      "in time, and "
                      "the ranks that did, ", FormatRanks(survivors), ", are not a majority of the ", not_gone,
                      " ranks whose processes are not gone (half of them counts only with the lowest, rank ", lowest,
                      "). Leaving live ranks out without a majority could let them form a communicator of their "
                      "own: end their processes (a gone rank is left out at once) or have them call chorusCommShrink");
}

}  // namespace chorus::shrink
