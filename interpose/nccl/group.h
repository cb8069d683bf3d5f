// ncclGroupStart/End. Collectives and point-to-point calls inside a group
// are Chorus's own group calls. Communicator creation (ncclCommInitRank*,
// ncclCommSplit) inside a group is deferred to the outermost ncclGroupEnd,
// which runs the creations concurrently: that is how one thread creates
// the communicators of several ranks (NCCL's single-process pattern), which
// would otherwise wait for each other. Group state is per thread, as in NCCL.
#pragma once

#include <nccl.h>

#include <functional>

namespace chorus_nccl {

// A deferred creation: returns its result and has set the thread's last
// error when it fails.
using Creation = std::function<ncclResult_t()>;

// True between ncclGroupStart and the matching ncclGroupEnd on this thread.
bool InGroup();

// Queues `creation` for the outermost ncclGroupEnd of this thread.
void DeferCreation(Creation creation);

ncclResult_t GroupStart();
ncclResult_t GroupEnd();

}  // namespace chorus_nccl
