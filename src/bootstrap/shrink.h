// Shrink: the survivors of a communicator agree on who is left and meet at a
// fresh rendezvous, without the communicator's transports (a failure shuts
// them down). Every rank keeps a small recovery listener from creation on and
// knows every rank's listener address; a listener that refuses connections
// belongs to a dead rank (the kernel closes a dead process's sockets).
//
// Protocol (docs/architecture.md, "Fault tolerance"):
//  - each survivor probes the listeners of the ranks below it in rank order;
//    the first that accepts a connection is its root candidate, and it joins
//    it (authenticated with the communicator secret). A rank that finds every
//    lower rank dead is the root.
//  - the root accepts joiners and probes the ranks still unheard of until
//    each has joined or is dead (or the gather deadline passes: ranks that
//    did not take part are left out); it drops joiners whose connection has
//    closed, starts a rendezvous root for the new communicator with a secret
//    derived from the old one and a fresh nonce, and sends every member the
//    same table: survivors in old-rank order, the nonce, the new root.
//  - a joiner whose root dies before answering scans again from rank 0.
// Every wait is bounded by the caller's deadline.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"
#include "bootstrap/bootstrap.h"
#include "transports/socket/socket.h"

namespace chorus {

// One rank's side of shrink for one communicator: its listener (open from
// creation until the communicator is released) and what it knows of the
// others.
struct RecoveryEndpoint {
  int rank = 0;
  int nranks = 0;
  uint8_t secret[16] = {};
  std::string ifname;                   // CHORUS_SOCKET_IFNAME of the communicator
  Socket listener;                      // accepts only while this rank shrinks
  std::string address;                  // the listener's "host:port"
  std::vector<std::string> addresses;   // every rank's listener, by rank
  std::mutex shrink_mutex;              // one shrink at a time per endpoint
};

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
// joiners still hear the answer); nothing waits past `deadline`.
Status AgreeOnSurvivors(RecoveryEndpoint& endpoint, Deadline gather_deadline, Deadline deadline,
                        ShrinkOutcome* outcome);

}  // namespace chorus
