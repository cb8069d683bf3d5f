#include "examples/trainer/launch.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "examples/trainer/gemm.h"

namespace trainer {
namespace {

bool UnderLauncher() {
  for (const char* name : {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

int RunWithComm(chorusComm_t comm, const RankMain& rank_main) {
  const int status = rank_main(comm);
  if (status != 0) {
    (void)chorusCommAbort(comm);  // peers blocked on us fail now instead of at their timeout
    return status;
  }
  (void)chorusCommDestroy(comm);
  return 0;
}

int BlasThreads(const LaunchOptions& options, int local_ranks) {
  if (options.blas_threads > 0) return options.blas_threads;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / local_ranks);
}

}  // namespace

int Launch(const LaunchOptions& options, const RankMain& rank_main) {
  chorusConfig_t config = CHORUS_CONFIG_INITIALIZER;
  const std::string algo = "allreduce:" + options.algo;
  if (options.algo != "auto") config.algo = algo.c_str();

  if (UnderLauncher()) {
    SetBlasThreads(BlasThreads(options, 1));
    chorusComm_t comm = nullptr;
    const chorusResult_t result = chorusCommInitFromEnv(&comm, &config);
    if (result != chorusSuccess) {
      std::fprintf(stderr, "chorusCommInitFromEnv: %s: %s\n", chorusGetErrorString(result), chorusGetLastError(nullptr));
      return 1;
    }
    return RunWithComm(comm, rank_main);
  }
  if (options.ranks == 1) {
    SetBlasThreads(BlasThreads(options, 1));
    return rank_main(nullptr);
  }

  chorusUniqueId id;
  if (chorusGetUniqueId(&id) != chorusSuccess) {
    std::fprintf(stderr, "chorusGetUniqueId: %s\n", chorusGetLastError(nullptr));
    return 1;
  }
  std::fflush(nullptr);  // children must not re-flush the parent's buffered output
  std::vector<pid_t> children;
  for (int rank = 0; rank < options.ranks; ++rank) {
    const pid_t pid = fork();
    if (pid < 0) {
      std::perror("fork");
      for (pid_t child : children) kill(child, SIGTERM);
      for (pid_t child : children) waitpid(child, nullptr, 0);
      return 1;
    }
    if (pid == 0) {
      SetBlasThreads(BlasThreads(options, options.ranks));
      chorusComm_t comm = nullptr;
      const chorusResult_t result = chorusCommInitRankConfig(&comm, options.ranks, id, rank, &config);
      if (result != chorusSuccess) {
        std::fprintf(stderr, "rank %d: chorusCommInitRank: %s: %s\n", rank, chorusGetErrorString(result),
                     chorusGetLastError(nullptr));
        _exit(1);
      }
      const int status = RunWithComm(comm, rank_main);
      std::fflush(nullptr);
      _exit(status);
    }
    children.push_back(pid);
  }
  int exit_status = 0;
  for (size_t remaining = children.size(); remaining > 0; --remaining) {
    int status = 0;
    const pid_t done = waitpid(-1, &status, 0);
    if (done < 0) break;
    const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!ok && options.elastic && WIFSIGNALED(status)) {
      std::fprintf(stderr, "elastic: process %d was killed by signal %d; the other ranks go on\n",
                   static_cast<int>(done), WTERMSIG(status));
      continue;
    }
    if (!ok && exit_status == 0) {
      exit_status = 1;
      std::fprintf(stderr, "a rank failed (process %d); stopping the others\n", static_cast<int>(done));
      for (pid_t child : children) {
        if (child != done) kill(child, SIGTERM);
      }
    }
  }
  return exit_status;
}

}  // namespace trainer
