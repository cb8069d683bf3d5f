#include "perf/cli/launch.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "perf/cli/mpi_launch.h"
#include "perf/cli/options.h"
#include "perf/cli/rank_sweep.h"
#include "perf/cli/thread_ranks.h"

namespace chorus::perf {

namespace {

constexpr int kExitUsage = 2;

// The world size a launcher announces, as chorusCommInitFromEnv reads it.
int LauncherWorldSize() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", "WORLD_SIZE"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && *value != '\0') return std::atoi(value);
  }
  return 1;
}

int RunFromEnvironment(CollectiveKind kind, const Options& options, int world_size) {
  if (options.ranks_per_process() != 1) {
    std::fprintf(stderr,
                 "-t/-g > 1 needs mpirun with an MPI build; with %d launched processes each runs one rank\n",
                 world_size);
    return kExitUsage;
  }
  chorusConfig_t config = ConfigFromOptions(options);
  chorusComm_t comm = nullptr;
  const chorusResult_t result = chorusCommInitFromEnv(&comm, &config);
  if (result != chorusSuccess) {
    std::fprintf(stderr, "chorusCommInitFromEnv failed: %s: %s\n", chorusGetErrorString(result),
                 chorusGetLastError(nullptr));
    return kExitCallFailed;
  }
  return RunRankSweep(kind, options, comm, RankPlace{0, world_size});
}

int RunStandalone(CollectiveKind kind, const Options& options) {
  chorusUniqueId id;
  const chorusResult_t result = chorusGetUniqueId(&id);
  if (result != chorusSuccess) {
    std::fprintf(stderr, "chorusGetUniqueId failed: %s: %s\n", chorusGetErrorString(result),
                 chorusGetLastError(nullptr));
    return kExitCallFailed;
  }
  const int ranks = options.ranks_per_process();
  return RunThreadRanks(kind, options, id, RankBlock{0, ranks, ranks, 1});
}

}  // namespace

int RunPerfMain(int argc, char** argv, CollectiveKind kind) {
  setlinebuf(stdout);
  Options options;
  std::string error;
  switch (ParseOptions(argc, argv, &options, &error)) {
    case ParseOutcome::kHelp:
      std::fputs(UsageText(argv[0]).c_str(), stdout);
      return kExitOk;
    case ParseOutcome::kError:
      std::fprintf(stderr, "%s\n%s", error.c_str(), UsageText(argv[0]).c_str());
      return kExitUsage;
    case ParseOutcome::kRun:
      break;
  }
  int code = kExitOk;
  if (LaunchedByMpirun()) {
    code = RunUnderMpi(argc, argv, kind, options);
  } else if (const int world_size = LauncherWorldSize(); world_size > 1) {
    code = RunFromEnvironment(kind, options, world_size);
  } else {
    code = RunStandalone(kind, options);
  }
  if (code == kExitCallFailed) std::fprintf(stderr, "%s_perf: FAILED (a call failed)\n", InfoOf(kind).name);
  return code;
}

}  // namespace chorus::perf
