// Staged calls for the explicit non-exact collectives (gossip, compressed
// allreduce): host work before and after an internal launch, all in the
// order of the caller's stream. The launch takes its ticket at the call, so
// the communicator's issue order is the caller's order on every rank.
#pragma once

#include <functional>
#include <vector>

#include "core/handles.h"
#include "core/launcher.h"

namespace chorus {

class StagedCall {
 public:
  StagedCall(chorusComm* comm, chorusStream* stream) : comm_(comm), stream_(stream) {}

  chorusComm* comm() const { return comm_; }

  // Host work that reads the user's input (encode, pack). Runs now on a NULL
  // stream, else when the stream reaches it.
  Status Before(std::function<void()> work);
  // Internal operations launched together (a group), on the caller's stream.
  Status Launch(const std::vector<Operation>& ops);
  // Host work that writes the user's output (decode). Skipped when the
  // communicator has failed, so a failed exchange writes nothing.
  Status After(std::function<void()> work);

 private:
  Status RunOrEnqueue(std::function<void()> work, bool skip_on_failure);

  chorusComm* comm_;
  chorusStream* stream_;
};

// An operation of `comm` for an internal collective of `count` `dtype`
// elements (Sum for reductions).
Operation InternalCollective(chorusComm* comm, Collective coll, size_t count, DataType dtype, const void* send,
                             void* recv);

// ceil(count / 8): bytes of `count` packed bits.
inline size_t PackedBitBytes(size_t count) { return count / 8 + (count % 8 != 0); }

}  // namespace chorus
