// The main of every *_perf CLI: parses the flags, starts the ranks the way
// the launch asks for, and returns the exit code.
//  - mpirun (MPI builds, OMPI_COMM_WORLD_SIZE set): rank 0 makes the unique
//    id and MPI_Bcasts it; each process runs -t ranks as threads.
//  - srun / torchrun-style / mpirun without MPI (the environment says more
//    than one rank): one rank per process via chorusCommInitFromEnv.
//  - otherwise: -t x -g ranks as threads of this process.
#pragma once

#include "perf/cli/collectives.h"

namespace chorus::perf {

int RunPerfMain(int argc, char** argv, CollectiveKind kind);

}  // namespace chorus::perf
