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
// thread that is. A short wait costs two uncontended atomic
// read-modify-writes and a load, no lock. CHORUS_MPI_PROGRESS=0 turns the
// helper off.
#pragma once

namespace chorus_mpi {

// RAII around a blocking Chorus wait on the calling thread.
class ProgressWatch {
 public:
  ProgressWatch();
  ~ProgressWatch();
  ProgressWatch(const ProgressWatch&) = delete;
  ProgressWatch& operator=(const ProgressWatch&) = delete;
};

// Stops the helper (at MPI_Finalize, before PMPI_Finalize).
void StopProgressHelper();

}  // namespace chorus_mpi
