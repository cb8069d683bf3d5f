// Launch under mpirun: MPI only carries the unique id (and nothing else);
// the benchmark's own traffic goes through chorus.
#pragma once

#include "perf/cli/collectives.h"
#include "perf/cli/options.h"

namespace chorus::perf {

// True when this binary has MPI support and mpirun started it
// (OMPI_COMM_WORLD_SIZE set), so MPI_Init is safe and needed.
bool LaunchedByMpirun();

// MPI_Init, the id from rank 0 by MPI_Bcast, -t ranks as threads per
// process, MPI_Finalize. Returns the exit code.
int RunUnderMpi(int argc, char** argv, CollectiveKind kind, const Options& options);

}  // namespace chorus::perf
