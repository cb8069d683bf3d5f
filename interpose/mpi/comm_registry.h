// The Chorus communicator behind each MPI communicator.
//
// Made lazily, on the first call on an MPI communicator that Chorus can
// serve. The interposer decides that from arguments every rank passes alike
// (MPI requires the same op, type signature, root and in-place use), so
// every rank of the communicator reaches the creation in the same call: it
// is collective over the MPI communicator (an agreement to try, refused when
// a rank has CHORUS_MPI_MAX_COMMS alive or too few file descriptors left;
// rank 0's chorusGetUniqueId broadcast with PMPI_Bcast;
// chorusCommInitRankConfig on every rank; an agreement that every rank
// succeeded, so that all or none use it). The result is cached as an MPI
// attribute whose delete callback destroys the Chorus communicator when the
// MPI one is freed; MPI_Finalize deletes the ones still alive. Each thread
// also keeps its last lookup, valid until any entry is destroyed (a freed
// handle may come back for another communicator).
#pragma once

#include <mpi.h>

#include <string>

#include "chorus/chorus.h"

namespace chorus_mpi {

struct CommEntry {
  MPI_Comm mpi_comm = MPI_COMM_NULL;
  chorusComm_t comm = nullptr;      // nullptr: Chorus does not serve this communicator
  chorusStream_t stream = nullptr;  // for non-blocking calls, made on first use
  int rank = 0;
  int size = 0;
  const char* unusable_reason = nullptr;  // why comm is nullptr
  std::string name;                       // the MPI communicator's name, for logs
};

// The entry of `comm`, made (collectively) on first use. Returns nullptr
// with *reason set when Chorus cannot serve calls on `comm`: an
// inter-communicator, a single rank, a refusal (see above) or a creation
// that failed on some rank.
// Every rank of `comm` gets the same answer.
CommEntry* ChorusCommFor(MPI_Comm comm, const char** reason);

// The host stream of `entry` for non-blocking calls (made on first use);
// nullptr if it cannot be made.
chorusStream_t StreamOf(CommEntry* entry);

// Destroys every Chorus communicator still alive (at MPI_Finalize).
void DestroyAllComms();

}  // namespace chorus_mpi
