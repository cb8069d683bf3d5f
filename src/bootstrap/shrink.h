// Shrink: the survivors of a communicator agree on who is left and meet at a
// fresh rendezvous, without the communicator's transports (a failure shuts
// them down). Every rank keeps a small recovery listener from creation on and
// knows every rank's listener address.
//
// A listener that refuses connections belongs to a rank that has left the
// communicator's lineage for good: its process is gone (the kernel closes a
// dead process's sockets), or it released every communicator that could
// still answer for it. A rank that took part in an agreed shrink does not
// close its listener while it holds a communicator made from this one (by
// shrink or split): the new communicator's endpoint keeps this one
// (`predecessor`), and a responder answers on it. So "refused" means "gone",
// never "left after a completed shrink", and a rank that comes late learns
// what was agreed without it instead of taking the members for dead.
//
// Protocol (docs/architecture.md, "Fault tolerance"):
//  - each survivor probes the listeners of the ranks below it in rank order;
//    the first that answers is its root candidate, and it joins it
//    (authenticated with the communicator secret). A rank whose listener
//    accepts the connection but which does not answer (stopped, hung, not
//    shrinking yet, or joining a lower rank itself) is passed over once the
//    survivor has waited halfway to its gather deadline (a later candidate,
//    kAnswerMs more). A rank that finds every lower rank gone or passed over
//    is the root.
//  - the root accepts joiners and asks every rank still unheard of (one open
//    connection each, the same request; refused: gone) until each has joined
//    or is gone, or the gather deadline passes: ranks that did not take part
//    are left out, but only by a majority: the survivors must be more than
//    half of the ranks whose listeners have not refused (exactly half, if
//    they hold the lowest of them), else the root fails with chorusTimeout
//    naming the absent. Two disjoint groups could both pass only if each
//    counted a member of the other gone, which a refusal rules out while
//    that member holds the lineage: so passing over a live rank never lets
//    two communicators form side by side. Only a refusal counts as gone: a
//    rank that cannot be reached (no route, or no answer within
//    kProbeWindowMs) may live behind a partition, so it is passed over and
//    counted live, and the two sides of a partition never both form. A rank that says it is not
//    shrinking now while sharing an earlier agreement with the root is alive
//    and holds the lineage: it is waited for past the gather deadline and
//    never left out (the root fails naming it instead). It drops joiners whose connection has closed, starts a
//    rendezvous root for the new communicator with a secret derived from the
//    old one and a fresh nonce, and sends every member the same table:
//    survivors in old-rank order, the nonce, the new root.
//  - a joiner whose root dies before answering scans again from rank 0.
//  - every member records the agreed membership on its endpoint. From then
//    on, whenever no shrink of this endpoint runs, a responder thread
//    answers each request on the listener: a rank outside the membership is
//    told it was left out (with the membership) and fails with
//    chorusRemoteError; a member, shrinking this communicator again, is told
//    to ask later (it scans again). A root that hears "left out" from a rank
//    it asks fails the same way and passes the answer on to its joiners. A
//    rank that learnt it was left out records that membership too: every
//    later shrink of its endpoint fails at once, and its responder tells
//    later askers. So no rank forms a communicator beside one formed without
//    it while any member still holds the lineage.
// Every wait is bounded by the caller's deadline; a question, once its
// listener's owner accepted it, by kAnswerMs. The responder serves until the
// endpoint is released or its next shrink starts.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"
#include "bootstrap/bootstrap.h"
#include "transports/socket/socket.h"

namespace chorus {

namespace shrink {
class Responder;
}

// One rank's side of shrink for one communicator: its listener (open from
// creation until the endpoint is released) and what it knows of the others.
// Held by the communicator's handle and, once a shrink of it was agreed here,
// by every communicator made from it in this process.
struct RecoveryEndpoint {
  RecoveryEndpoint();
  ~RecoveryEndpoint();  // stops the responder, then closes the listener
  RecoveryEndpoint(const RecoveryEndpoint&) = delete;
  RecoveryEndpoint& operator=(const RecoveryEndpoint&) = delete;

  int rank = 0;
  int nranks = 0;
  uint8_t secret[16] = {};
  std::string ifname;                   // CHORUS_SOCKET_IFNAME of the communicator
  Socket listener;                      // served by a shrink, or by the responder
  std::string address;                  // the listener's "host:port"
  std::vector<std::string> addresses;   // every rank's listener, by rank
  std::mutex shrink_mutex;              // one shrink at a time per endpoint

  // Set by AgreeOnSurvivors under shrink_mutex: the membership (old ranks,
  // ascending) of the last shrink agreed here, or the one this rank learnt
  // it was left out of (then `left_out` is what every later shrink of this
  // endpoint returns), and what answers askers with it while no shrink runs.
  std::vector<int> agreed;
  Status left_out;
  std::atomic<bool> ever_agreed{false};  // a shrink that included this rank
  std::unique_ptr<shrink::Responder> responder;

  // The nearest earlier endpoint of this communicator's lineage on which a
  // shrink was agreed: kept open (and answering) while this one lives.
  std::shared_ptr<RecoveryEndpoint> predecessor;
};

// What a communicator made from the one that owns `parent` (by shrink or
// split) must keep alive: `parent` if a shrink of it was agreed here, else
// what `parent` keeps. Null for none.
std::shared_ptr<RecoveryEndpoint> LineageToKeep(const std::shared_ptr<RecoveryEndpoint>& parent);

// Longest listener address (as carried in a fixed-size slot).
constexpr size_t kRecoveryAddressBytes = 96;

// Opens `endpoint`'s listener on the interface chosen by `ifname`.
Status OpenRecoveryListener(const std::string& ifname, RecoveryEndpoint* endpoint);

struct ShrinkOutcome {
  std::vector<int> survivors;  // old ranks, ascending; the new rank is the index
  int new_rank = -1;
  UniqueIdContents id;  // rendezvous of the new communicator
};

// Collective over the surviving ranks of `endpoint`'s communicator. The root
// stops gathering at `gather_deadline` (before `deadline`, so that late
// joiners still hear the answer); nothing waits past `deadline`. On success
// the membership is recorded on `endpoint` and answered to late ranks from
// then on (see above). A rank left out of a shrink agreed before (here or by
// the members it asks) gets chorusRemoteError naming that membership.
Status AgreeOnSurvivors(RecoveryEndpoint& endpoint, Deadline gather_deadline, Deadline deadline,
                        ShrinkOutcome* outcome);

}  // namespace chorus
