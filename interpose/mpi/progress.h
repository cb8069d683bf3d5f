// Keeps MPI's progress engine going while a rank waits in Chorus.
//
// Open MPI moves point-to-point messages only while the program is inside
// an MPI call. A collective served by Chorus waits outside Open MPI, so a
// legal program such as
//   rank 0: MPI_Irecv(from 1); MPI_Allreduce(...); MPI_Wait(...)
//   rank 1: MPI_Send(to 0, large);  MPI_Allreduce(...)
// would deadlock: rank 1's rendezvous send needs rank 0's progress, rank 0
// waits in the allreduce for rank 1. A helper thread watches the blocking
// waits (ProgressWatch); when one lasts longer than a tick (5 ms), it calls
// PMPI_Iprobe every 100 us until the wait ends. The program's thread is
// inside an MPI call meanwhile, so MPI still sees one call at a time (the
// watch's exit waits for a probe in flight); Open MPI does not mind which
// thread that is. A short wait costs two plain stores to the thread's own
// slot, a compiler barrier and a load: no lock and no atomic
// read-modify-write (the helper's side of the handshake is a membarrier,
// asymmetric_fence.h). CHORUS_MPI_PROGRESS=0 turns the helper off.
#pragma once

#include <stdint.h>

namespace chorus_mpi {

struct WaitSlot;  // progress.cc: one per thread that waited

// RAII around a blocking Chorus wait on the calling thread (a watch inside
// another on the same thread adds nothing).
class ProgressWatch {
 public:
  ProgressWatch();
  ~ProgressWatch();
  ProgressWatch(const ProgressWatch&) = delete;
  ProgressWatch& operator=(const ProgressWatch&) = delete;

 private:
  WaitSlot* slot_ = nullptr;  // null: no helper, or an outer watch has it
  uint64_t mark_ = 0;         // the slot's value during this wait (odd)
};

// Stops the helper (at MPI_Finalize, before PMPI_Finalize).
void StopProgressHelper();

}  // namespace chorus_mpi
