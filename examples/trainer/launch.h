// Launch: gives every rank a communicator and runs the rank's work.
//  - under mpirun / srun / torchrun (WORLD_SIZE, OMPI_COMM_WORLD_SIZE,
//    PMI_SIZE or SLURM_NTASKS set): this process is one rank,
//    chorusCommInitFromEnv;
//  - else with ranks > 1: the process makes a unique id, forks `ranks`
//    children (which share the already loaded data copy-on-write), and waits;
//    if one child fails the others are stopped;
//  - else: one rank, no communicator (null).
#pragma once

#include <functional>
#include <string>

#include "chorus/chorus.h"

namespace trainer {

struct LaunchOptions {
  int ranks = 1;
  std::string algo = "auto";  // allreduce algorithm forced through chorusConfig_t.algo
  int blas_threads = 0;       // 0: cores / ranks
  bool elastic = false;       // a rank killed by a signal does not stop the others
};

// Returns an exit status: 0 when every rank's `rank_main` returned 0.
using RankMain = std::function<int(chorusComm_t comm)>;
int Launch(const LaunchOptions& options, const RankMain& rank_main);

}  // namespace trainer
