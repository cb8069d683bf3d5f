#include "perf/cli/mpi_launch.h"

#include <cstdio>
#include <cstdlib>

#include "chorus_build_config.h"
#include "perf/cli/rank_sweep.h"
#include "perf/cli/thread_ranks.h"

#if CHORUS_HAVE_MPI
// The C API only: the deprecated C++ bindings need libmpi_cxx.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace chorus::perf {

#if CHORUS_HAVE_MPI

bool LaunchedByMpirun() { return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr; }

int RunUnderMpi(int argc, char** argv, CollectiveKind kind, const Options& options) {
  if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
    std::fprintf(stderr, "MPI_Init failed\n");
    return kExitCallFailed;
  }
  int processes = 1;
  int process = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &processes);
  MPI_Comm_rank(MPI_COMM_WORLD, &process);

  // Rank 0's id, preceded by whether making it worked, so that a failure
  // there ends every process instead of leaving them waiting in init.
  struct {
    int ok;
    chorusUniqueId id;
  } message{};
  if (process == 0) {
    const chorusResult_t result = chorusGetUniqueId(&message.id);
    message.ok = result == chorusSuccess;
    if (!message.ok) {
      std::fprintf(stderr, "chorusGetUniqueId failed: %s: %s\n", chorusGetErrorString(result),
                   chorusGetLastError(nullptr));
    }
  }
  MPI_Bcast(&message, sizeof(message), MPI_BYTE, 0, MPI_COMM_WORLD);
  int code = kExitCallFailed;
  if (message.ok) {
    const int per_process = options.ranks_per_process();
    const RankBlock block{process * per_process, per_process, processes * per_process, processes};
    code = RunThreadRanks(kind, options, message.id, block);
  }
  MPI_Finalize();
  return code;
}

#else

bool LaunchedByMpirun() { return false; }

int RunUnderMpi(int, char**, CollectiveKind, const Options&) {
  std::fprintf(stderr, "this binary was built without MPI\n");
  return kExitCallFailed;
}

#endif

}  // namespace chorus::perf
