// A survivor's side of shrink: find the lowest live rank and join it, or be
// the root when every lower rank is gone; then record what was agreed and
// answer late ranks with it.
#include "bootstrap/shrink.h"

#include <algorithm>
#include <thread>

#include "base/log.h"
#include "bootstrap/shrink_protocol.h"

namespace chorus {
namespace {

using namespace shrink;

// Pauses before scanning again: after a candidate went away, and (longer)
// after a member of an earlier shrink said it is not shrinking now.
constexpr int kRescanPauseMs = 10;
constexpr int kAskAgainPauseMs = 50;

// How a join attempt ended when it did not settle the shrink: scan again
// from rank 0 (`wanted`), or go on to the next candidate (`pass_over`: the
// candidate is alive but did not answer in time).
struct Rescan {
  bool wanted = false;
  int pause_ms = kRescanPauseMs;
  std::string why;
  bool pass_over = false;
};

// Joins the root candidate on `socket`. Sets `rescan` when the candidate
// went away (or dropped us) before answering, or is not shrinking now: the
// caller scans again. Otherwise the result is final.
Status JoinRoot(const RecoveryEndpoint& endpoint, const Socket& socket, int root, Deadline answer_by, Deadline deadline,
                ShrinkOutcome* outcome, Rescan* rescan, std::vector<int>* left_out_of) {
  Status sent = SendRequest(endpoint, socket, answer_by);
  if (sent.code() == chorusTimeout) {
    // Its kernel queued the connection, but nobody on that rank accepted it:
    // it is stopped or hung, not shrinking yet, or joining a lower rank.
    if (!deadline.Expired()) {
      *rescan = {false, 0, StrCat("rank ", root, " accepts connections on its recovery listener but did not answer")};
      rescan->pass_over = true;
      return sent;
    }
    return TimeoutError("rank ", endpoint.rank, ": rank ", root,
                        " accepts connections on its recovery listener but "
                        "never answered before the deadline: it is stopped or hung, or did not call chorusCommShrink "
                        "in time");
  }
  if (sent.code() == chorusRemoteError) {
    *rescan = {true, kRescanPauseMs, sent.message()};
    return sent;
  }
  CHORUS_RETURN_IF_ERROR(sent);
  Reply reply;
  Status received = ReadReply(socket, deadline, &reply);
  if (received.code() == chorusTimeout) {
    return TimeoutError("rank ", endpoint.rank, " timed out waiting for shrink root rank ", root,
                        " to hear from every survivor");
  }
  if (received.code() == chorusRemoteError) {
    *rescan = {true, kRescanPauseMs, received.message()};
    return received;
  }
  CHORUS_RETURN_IF_ERROR(received);
  if (reply.code == kReplyLeftOut || reply.code == kReplyNotShrinking) {
    std::vector<int> agreed;
    CHORUS_RETURN_IF_ERROR(DecodeRanks(reply.body, endpoint.nranks, &agreed));
    if (reply.code == kReplyLeftOut) {
      if (std::binary_search(agreed.begin(), agreed.end(), endpoint.rank)) {
        return InternalError("shrink: rank ", root, " told rank ", endpoint.rank, " it was left out of ",
                             FormatRanks(agreed));
      }
      *left_out_of = agreed;
      return LeftOutError(endpoint.rank, agreed, root);
    }
    *rescan = {true, kAskAgainPauseMs,
               StrCat("rank ", root, " agreed on ranks ", FormatRanks(agreed),
                      " in an earlier shrink of this communicator and is not shrinking it now")};
    return Status::Ok();
  }
  // A refusal is final: scanning again would meet the same root.
  if (reply.code != chorusSuccess) {
    return Status(static_cast<chorusResult_t>(reply.code),
                  StrCat("shrink root rank ", root, " refused rank ", endpoint.rank, ": ", reply.body));
  }
  Table table;
  CHORUS_RETURN_IF_ERROR(DecodeTable(reply.body, endpoint.nranks, &table));
  const auto mine = std::find(table.survivors.begin(), table.survivors.end(), endpoint.rank);
  if (mine == table.survivors.end() || table.survivors.front() != root) {
    return InternalError("shrink: root rank ", root, " sent a table without rank ", endpoint.rank);
  }
  outcome->survivors = table.survivors;
  outcome->new_rank = static_cast<int>(mine - table.survivors.begin());
  outcome->id.root_address = table.root_address;
  outcome->id.root_listening = true;
  DeriveSecret(endpoint.secret, table.nonce, outcome->id.secret);
  return Status::Ok();
}

Status NoRoot(const RecoveryEndpoint& endpoint, const std::string& last_rescan) {
  return TimeoutError("rank ", endpoint.rank, ": shrink found no root before the deadline",
                      last_rescan.empty() ? "" : " (last: ", last_rescan, last_rescan.empty() ? "" : ")");
}

Status Agree(RecoveryEndpoint& endpoint, Deadline gather_deadline, Deadline deadline, ShrinkOutcome* outcome,
             std::vector<int>* left_out_of) {
  // A candidate that accepts connections but does not answer is passed over
  // once this rank has waited halfway to its gather deadline (the root that
  // follows still gathers), and a later one after kAnswerMs: a root answers
  // at once. Passing over a live rank is safe because the root then needs a
  // majority to leave it out (shrink_root.cc).
  const Deadline patience = Deadline::AfterMs(gather_deadline.RemainingMs() / 2);
  std::vector<bool> gone(endpoint.rank, false);         // refused: its process left the lineage
  std::vector<bool> passed_over(endpoint.rank, false);  // alive but silent
  std::string last_rescan;
  while (!deadline.Expired()) {
    Rescan rescan;
    for (int candidate = 0; candidate < endpoint.rank && !rescan.wanted; ++candidate) {
      if (gone[candidate] || passed_over[candidate]) continue;
      ProbeState probed;
      Socket socket;
      CHORUS_RETURN_IF_ERROR(Probe(endpoint.addresses[candidate], deadline, &probed, &socket));
      if (probed == ProbeState::kGone) {
        gone[candidate] = true;
        continue;
      }
      if (probed == ProbeState::kUnreachable) {
        // Perhaps alive behind a partition: passed over, never gone.
        CHORUS_INFO("SHRINK", "rank ", endpoint.rank, ": passing over rank ", candidate, ", which is unreachable");
        passed_over[candidate] = true;
        continue;
      }
      socket.set_peer_name(StrCat("shrink root candidate rank ", candidate, " (", socket.peer_name(), ")"));
      const Deadline answer_by = Sooner(deadline, patience.Expired() ? Deadline::AfterMs(kAnswerMs) : patience);
      rescan = Rescan();
      Status joined = JoinRoot(endpoint, socket, candidate, answer_by, deadline, outcome, &rescan, left_out_of);
      if (rescan.pass_over) {
        CHORUS_INFO("SHRINK", "rank ", endpoint.rank, ": passing over ", rescan.why);
        passed_over[candidate] = true;
        rescan = Rescan();
        continue;
      }
      if (!rescan.wanted) {
        // Timing out after scanning again is the deadline, not this candidate.
        return joined.code() == chorusTimeout && !last_rescan.empty() ? NoRoot(endpoint, last_rescan) : joined;
      }
      CHORUS_INFO("SHRINK", "rank ", endpoint.rank, ": scanning again: ", rescan.why);
      last_rescan = rescan.why;
    }
    if (deadline.Expired()) break;
    if (!rescan.wanted) return ServeAsRoot(endpoint, gather_deadline, deadline, gone, outcome, left_out_of);
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(rescan.pause_ms, deadline.RemainingMs())));
  }
  return NoRoot(endpoint, last_rescan);
}

}  // namespace

RecoveryEndpoint::RecoveryEndpoint() = default;

RecoveryEndpoint::~RecoveryEndpoint() { responder.reset(); }

std::shared_ptr<RecoveryEndpoint> LineageToKeep(const std::shared_ptr<RecoveryEndpoint>& parent) {
  if (parent == nullptr) return nullptr;
  return parent->ever_agreed.load() ? parent : parent->predecessor;
}

Status AgreeOnSurvivors(RecoveryEndpoint& endpoint, Deadline gather_deadline, Deadline deadline,
                        ShrinkOutcome* outcome) {
  std::unique_lock<std::mutex> lock(endpoint.shrink_mutex, std::try_to_lock);
  if (!lock.owns_lock()) return InvalidUsage("a shrink of this communicator is already running on another thread");
  if (static_cast<int>(endpoint.addresses.size()) != endpoint.nranks || !endpoint.listener.valid()) {
    return InternalError("shrink: the communicator has no recovery endpoint");
  }
  // The listener belongs to this shrink until it ends.
  endpoint.responder.reset();
  std::vector<int> left_out_of;
  // Once left out, always: the others went on without this rank.
  Status status =
      endpoint.left_out.ok() ? Agree(endpoint, gather_deadline, deadline, outcome, &left_out_of) : endpoint.left_out;
  if (status.ok()) {
    endpoint.agreed = outcome->survivors;
    endpoint.ever_agreed.store(true);
  } else if (!left_out_of.empty()) {
    // Passed on to ranks that ask this one (late ranks too, or joiners).
    endpoint.agreed = left_out_of;
    endpoint.left_out = status;
  }
  if (!endpoint.agreed.empty()) {
    // Without it a late rank could take this one for dead: a member that
    // cannot answer fails its shrink (the others' then fail without it).
    Status started = Responder::Start(endpoint, endpoint.agreed, &endpoint.responder);
    if (!started.ok()) {
      CHORUS_WARN("SHRINK", "rank ", endpoint.rank, ": ", started.message());
      if (status.ok()) status = started.WithContext(StrCat("rank ", endpoint.rank, ": after the shrink agreement"));
    }
  }
  return status;
}

}  // namespace chorus
