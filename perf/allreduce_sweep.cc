// chorus_allreduce_sweep: float32 sum allreduce from 8 B to 64 MiB (x2 steps)
// on N ranks of this host, as forked processes (default) or threads (-t).
// Every result is checked exactly (integer-valued floats); prints one table
// row per size and exits non-zero if any value was wrong or a call failed.
//
//   chorus_allreduce_sweep [-n ranks] [-t] [-b min_bytes] [-e max_bytes]
//                          [-w warmup] [-i iters] [-a algo]
#include <getopt.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "chorus/chorus.h"

namespace {

struct Options {
  int nranks = 4;
  bool threads = false;
  size_t min_bytes = 8;
  size_t max_bytes = size_t{64} << 20;
  int warmup = -1;  // -1: by size
  int iters = -1;   // -1: by size
  const char* algo = nullptr;
};

constexpr int kChildDeadlineSeconds = 600;

// About 256 MiB of traffic per size: many iterations of small sizes, few
// of large ones, so the whole sweep takes seconds on a small machine.
int TimedIterations(const Options& options, size_t bytes) {
  if (options.iters > 0) return options.iters;
  return static_cast<int>(std::clamp<size_t>((size_t{256} << 20) / bytes, 3, 200));
}

int WarmupIterations(const Options& options, size_t bytes) {
  if (options.warmup >= 0) return options.warmup;
  return bytes >= (size_t{16} << 20) ? 1 : 3;
}

// Rank r contributes (i mod 251) + r: every sum is an exact float32.
float InputValue(int rank, size_t index) { return static_cast<float>(index % 251 + rank); }
float ExpectedValue(int nranks, size_t index) {
  return static_cast<float>(nranks * (index % 251) + nranks * (nranks - 1) / 2);
}

size_t CountWrong(const std::vector<float>& result, int nranks) {
  size_t wrong = 0;
  for (size_t i = 0; i < result.size(); ++i) wrong += result[i] != ExpectedValue(nranks, i);
  return wrong;
}

bool Check(chorusResult_t result, chorusComm_t comm, int rank, const char* what) {
  if (result == chorusSuccess) return true;
  std::fprintf(stderr, "rank %d: %s failed: %s: %s\n", rank, what, chorusGetErrorString(result),
               chorusGetLastError(comm));
  return false;
}

// One rank's whole sweep; rank 0 prints. Returns the process exit code.
int Sweep(const Options& options, chorusComm_t comm, int rank) {
  const int n = options.nranks;
  if (rank == 0) {
    std::printf("# chorus_allreduce_sweep: %d ranks as %s, float32 sum, out of place%s%s\n", n,
                options.threads ? "threads" : "processes", options.algo ? ", algo " : "",
                options.algo ? options.algo : "");
    std::printf("# %12s %12s %12s %12s %12s %8s\n", "size(B)", "count", "time(us)", "algbw(GB/s)", "busbw(GB/s)",
                "#wrong");
  }
  bool all_right = true;
  for (size_t bytes = options.min_bytes; bytes <= options.max_bytes; bytes *= 2) {
    const size_t count = bytes / sizeof(float);
    std::vector<float> send(count);
    std::vector<float> recv(count, -1.0f);
    for (size_t i = 0; i < count; ++i) send[i] = InputValue(rank, i);
    size_t wrong = 0;
    for (int i = 0; i < WarmupIterations(options, bytes); ++i) {
      if (!Check(chorusAllReduce(send.data(), recv.data(), count, chorusFloat32, chorusSum, comm, nullptr), comm, rank,
                 "warm-up allreduce")) {
        return 2;
      }
      wrong += CountWrong(recv, n);
    }
    std::fill(recv.begin(), recv.end(), -1.0f);  // stale results must not pass
    const int iters = TimedIterations(options, bytes);
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) {
      if (!Check(chorusAllReduce(send.data(), recv.data(), count, chorusFloat32, chorusSum, comm, nullptr), comm, rank,
                 "timed allreduce")) {
        return 2;
      }
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    wrong += CountWrong(recv, n);
    // The slowest rank's time and everyone's wrong values.
    double reduced[2] = {seconds / iters, static_cast<double>(wrong)};
    double slowest = 0;
    double total_wrong = 0;
    if (!Check(chorusAllReduce(&reduced[0], &slowest, 1, chorusFloat64, chorusMax, comm, nullptr), comm, rank,
               "time reduction") ||
        !Check(chorusAllReduce(&reduced[1], &total_wrong, 1, chorusFloat64, chorusSum, comm, nullptr), comm, rank,
               "check reduction")) {
      return 2;
    }
    all_right = all_right && total_wrong == 0;
    if (rank == 0) {
      const double algbw = static_cast<double>(bytes) / slowest / 1e9;
      const double busbw = algbw * 2.0 * (n - 1) / n;
      std::printf("  %12zu %12zu %12.1f %12.3f %12.3f %8.0f\n", bytes, count, slowest * 1e6, algbw, busbw, total_wrong);
      std::fflush(stdout);
    }
  }
  return all_right ? 0 : 1;
}

chorusResult_t InitRank(const Options& options, const chorusUniqueId& id, int rank, chorusComm_t* comm) {
  chorusConfig_t config = CHORUS_CONFIG_INITIALIZER;
  config.algo = options.algo;
  return chorusCommInitRankConfig(comm, options.nranks, id, rank, &config);
}

int RunRank(const Options& options, const chorusUniqueId& id, int rank) {
  chorusComm_t comm = nullptr;
  if (!Check(InitRank(options, id, rank, &comm), nullptr, rank, "init")) return 2;
  const int code = Sweep(options, comm, rank);
  if (code == 0) {
    (void)chorusCommDestroy(comm);
  } else {
    (void)chorusCommAbort(comm);  // peers may be gone: do not wait for them
  }
  return code;
}

int RunAsThreads(const Options& options, const chorusUniqueId& id) {
  std::vector<int> codes(options.nranks, 2);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < options.nranks; ++rank) {
    threads.emplace_back([&, rank] { codes[rank] = RunRank(options, id, rank); });
  }
  for (auto& thread : threads) thread.join();
  return *std::max_element(codes.begin(), codes.end());
}

int RunAsProcesses(const Options& options, const chorusUniqueId& id) {
  std::fflush(nullptr);
  std::vector<pid_t> children;
  for (int rank = 0; rank < options.nranks; ++rank) {
    const pid_t pid = fork();
    if (pid == 0) {
      const int code = RunRank(options, id, rank);
      std::fflush(nullptr);
      _exit(code);
    }
    if (pid < 0) {
      std::perror("fork");
      for (pid_t child : children) kill(child, SIGKILL);
      return 2;
    }
    children.push_back(pid);
  }
  int worst = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kChildDeadlineSeconds);
  size_t running = children.size();
  while (running > 0) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      --running;
      const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 3;
      if (code != 0) std::fprintf(stderr, "rank process %d ended with code %d\n", pid, code);
      worst = std::max(worst, code);
    } else if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "ranks still running after %d s: killed\n", kChildDeadlineSeconds);
      for (pid_t child : children) kill(child, SIGKILL);
      while (waitpid(-1, &status, 0) > 0) {
      }
      return 3;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  return worst;
}

void Usage(const char* program) {
  std::fprintf(stderr,
               "usage: %s [-n ranks] [-t] [-b min_bytes] [-e max_bytes] [-w warmup] [-i iters] "
               "[-a algo]\n"
               "  -n  ranks on this host (default 4)\n"
               "  -t  ranks as threads of one process (default: forked processes)\n"
               "  -b/-e  smallest/largest message in bytes, K/M/G allowed (default 8 / 64M), x2 steps\n"
               "  -w/-i  warm-up/timed iterations per size (default: by size)\n"
               "  -a  algorithm, as CHORUS_ALGO (e.g. ring, tree)\n",
               program);
}

// A byte count with an optional K/M/G suffix (powers of 1024); 0 when bad.
size_t ParseSize(const char* text) {
  char* end = nullptr;
  unsigned long long value = std::strtoull(text, &end, 10);
  if (end == text) return 0;
  switch (*end) {
    case 'K': case 'k': value <<= 10; ++end; break;
    case 'M': case 'm': value <<= 20; ++end; break;
    case 'G': case 'g': value <<= 30; ++end; break;
    default: break;
  }
  return *end == '\0' ? static_cast<size_t>(value) : 0;
}

bool ParseOptions(int argc, char** argv, Options* options) {
  int opt;
  while ((opt = getopt(argc, argv, "n:tb:e:w:i:a:h")) != -1) {
    switch (opt) {
      case 'n':
        options->nranks = std::atoi(optarg);
        break;
      case 't':
        options->threads = true;
        break;
      case 'b':
        options->min_bytes = ParseSize(optarg);
        break;
      case 'e':
        options->max_bytes = ParseSize(optarg);
        break;
      case 'w':
        options->warmup = std::atoi(optarg);
        break;
      case 'i':
        options->iters = std::atoi(optarg);
        break;
      case 'a':
        options->algo = optarg;
        break;
      default:
        return false;
    }
  }
  return options->nranks >= 1 && options->min_bytes >= sizeof(float) && options->min_bytes <= options->max_bytes &&
         optind == argc;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (!ParseOptions(argc, argv, &options)) {
    Usage(argv[0]);
    return 2;
  }
  chorusUniqueId id;
  if (!Check(chorusGetUniqueId(&id), nullptr, -1, "chorusGetUniqueId")) return 2;
  const int code = options.threads ? RunAsThreads(options, id) : RunAsProcesses(options, id);
  if (code != 0) std::fprintf(stderr, "chorus_allreduce_sweep: FAILED (code %d)\n", code);
  return code;
}
