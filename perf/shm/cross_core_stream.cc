// What two processes on two cores can move to each other through shared
// memory, the way the shm transport's ring moves a message: both stream N
// bytes to the other at once, in 64 KiB records through a 1 MiB ring each
// way (the transport's record and ring sizes for 2 ranks), the sender
// copying each record in, the receiver copying it out ("copy") or summing it
// into its own floats ("combine", Chorus's reduction kernel). Nothing of
// Chorus's protocol: only the copies, a head and a tail per ring.
//
// A ring allreduce of 2N bytes between two processes is a combine of N bytes
// each way (reduce-scatter), then a copy of N bytes each way (allgather), so
// the sum of the two medians is a floor for it on this host without a
// single-copy path between processes; printed as `allreduce_floor_us`.
//
//   build/perf/shm/cross_core_stream                 # 64 KiB .. 4 MiB each way
//   build/perf/shm/cross_core_stream -b 1M -e 1M -r 500 -c 0,1
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "base/config.h"
#include "kernels/reduce.h"

namespace {

constexpr size_t kRecordBytes = 64 << 10;
constexpr size_t kRingBytes = 1 << 20;
constexpr size_t kRecords = kRingBytes / kRecordBytes;

// One direction: records written at `head`, freed at `tail`.
struct alignas(64) Ring {
  std::atomic<uint64_t> head{0};
  alignas(64) std::atomic<uint64_t> tail{0};
  alignas(4096) unsigned char data[kRingBytes];
};

// What both processes share: a ring each way and a barrier per repeat.
struct Shared {
  Ring rings[2];  // rings[r]: rank r sends
  alignas(64) std::atomic<uint64_t> arrived[2];
};

enum class Mode { kCopy, kCombine };

// A size as CHORUS_* variables take it (base/config.h), a multiple of 64.
bool ParseSize(const char* flag, const char* text, size_t* out) {
  const chorus::Status status = chorus::ParseBytes(text, flag, out);
  if (!status.ok()) return std::fprintf(stderr, "%s\n", status.message().c_str()), false;
  if (*out == 0 || *out % 64 != 0) return std::fprintf(stderr, "%s: a positive multiple of 64 bytes\n", flag), false;
  return true;
}

void Pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof(set), &set) != 0) std::perror("sched_setaffinity (running unpinned)");
}

// Both ranks wait here until the other arrives for the same repeat.
void Meet(Shared* shared, int rank, uint64_t repeat) {
  shared->arrived[rank].store(repeat, std::memory_order_release);
  while (shared->arrived[1 - rank].load(std::memory_order_acquire) < repeat) {
  }
}

// Streams `bytes` to the peer while taking `bytes` from it; microseconds.
double StreamOnce(Shared* shared, int rank, Mode mode, const std::vector<float>& src, std::vector<float>* dst,
                  size_t bytes) {
  Ring& out = shared->rings[rank];
  Ring& in = shared->rings[1 - rank];
  const auto* from = reinterpret_cast<const unsigned char*>(src.data());
  auto* to = reinterpret_cast<unsigned char*>(dst->data());
  uint64_t sent = out.head.load(std::memory_order_relaxed);
  uint64_t taken = in.tail.load(std::memory_order_relaxed);
  const auto start = std::chrono::steady_clock::now();
  size_t sent_bytes = 0, taken_bytes = 0;
  while (sent_bytes < bytes || taken_bytes < bytes) {
    if (sent_bytes < bytes && sent - out.tail.load(std::memory_order_acquire) < kRecords) {
      const size_t n = std::min(kRecordBytes, bytes - sent_bytes);
      std::memcpy(out.data + (sent % kRecords) * kRecordBytes, from + sent_bytes, n);
      sent_bytes += n;
      out.head.store(++sent, std::memory_order_release);
    }
    if (taken_bytes < bytes && in.head.load(std::memory_order_acquire) > taken) {
      const size_t n = std::min(kRecordBytes, bytes - taken_bytes);
      const unsigned char* record = in.data + (taken % kRecords) * kRecordBytes;
      if (mode == Mode::kCopy) {
        std::memcpy(to + taken_bytes, record, n);
      } else {
        chorus::ReduceKernel(to + taken_bytes, to + taken_bytes, record, n / sizeof(float), chorusFloat32,
                             chorus::ReduceOp::kSum);
      }
      taken_bytes += n;
      in.tail.store(++taken, std::memory_order_release);
    }
  }
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
}

// Median over `repeats` (after 10 unmeasured) of the slower rank's time:
// each rank writes its times to `times[rank]`.
void Measure(Shared* shared, int rank, Mode mode, size_t bytes, int repeats, uint64_t* repeat, double* times) {
  std::vector<float> src(bytes / sizeof(float), 1.0f + rank), dst(bytes / sizeof(float), 0.0f);
  for (int i = -10; i < repeats; ++i) {
    Meet(shared, rank, ++*repeat);
    const double us = StreamOnce(shared, rank, mode, src, &dst, bytes);
    if (i >= 0) times[i] = us;
  }
}

}  // namespace

int main(int argc, char** argv) {
  size_t min_bytes = 64 << 10, max_bytes = 4 << 20;
  int repeats = 200;
  int cpus[2] = {0, 1};
  int opt;
  while ((opt = getopt(argc, argv, "b:e:r:c:h")) != -1) {
    switch (opt) {
      case 'b':
        if (!ParseSize("-b", optarg, &min_bytes)) return 2;
        break;
      case 'e':
        if (!ParseSize("-e", optarg, &max_bytes)) return 2;
        break;
      case 'r':
        repeats = std::atoi(optarg);
        if (repeats < 1) return std::fprintf(stderr, "-r: at least 1\n"), 2;
        break;
      case 'c':
        if (std::sscanf(optarg, "%d,%d", &cpus[0], &cpus[1]) != 2) return std::fprintf(stderr, "-c: CPU,CPU\n"), 2;
        break;
      default:
        std::fprintf(stderr, "usage: %s [-b bytes] [-e bytes] [-r repeats] [-c cpu,cpu]\n", argv[0]);
        return opt == 'h' ? 0 : 2;
    }
  }
  const size_t sizes = [&] {
    size_t n = 0;
    for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 2) ++n;
    return n;
  }();
  // Shared: the rings, and each rank's times of each size and mode.
  const size_t times_per_rank = sizes * 2 * static_cast<size_t>(repeats);
  const size_t total = sizeof(Shared) + 2 * times_per_rank * sizeof(double);
  void* memory = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) return std::perror("mmap"), 1;
  auto* shared = new (memory) Shared;
  auto* times = reinterpret_cast<double*>(static_cast<unsigned char*>(memory) + sizeof(Shared));
  const pid_t child = fork();
  if (child < 0) return std::perror("fork"), 1;
  const int rank = child == 0 ? 1 : 0;
  Pin(cpus[rank]);
  uint64_t repeat = 0;
  double* mine = times + rank * times_per_rank;
  size_t index = 0;
  for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 2, ++index) {
    for (Mode mode : {Mode::kCopy, Mode::kCombine}) {
      Measure(shared, rank, mode, bytes, repeats, &repeat, mine + (index * 2 + (mode == Mode::kCombine)) * repeats);
    }
  }
  if (child == 0) _exit(0);
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::fprintf(stderr, "rank 1 failed\n"), 1;
  std::printf("# 2 processes on CPUs %d and %d, both directions at once, %zu KiB records, %zu KiB ring; "
              "median of %d repeats of the slower rank\n",
              cpus[0], cpus[1], kRecordBytes >> 10, kRingBytes >> 10, repeats);
  std::printf("%12s %10s %10s %12s %10s %20s\n", "bytes_each", "copy_us", "copy_GB/s", "combine_us", "comb_GB/s",
              "allreduce_floor_us");
  index = 0;
  for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 2, ++index) {
    double median[2];
    for (int mode = 0; mode < 2; ++mode) {
      std::vector<double> slower(repeats);
      for (int i = 0; i < repeats; ++i) {
        const size_t at = (index * 2 + mode) * repeats + i;
        slower[i] = std::max(times[at], times[times_per_rank + at]);
      }
      std::nth_element(slower.begin(), slower.begin() + repeats / 2, slower.end());
      median[mode] = slower[repeats / 2];
    }
    std::printf("%12zu %10.1f %10.2f %12.1f %10.2f %20.1f\n", bytes, median[0], bytes / median[0] / 1e3, median[1],
                bytes / median[1] / 1e3, median[0] + median[1]);
  }
  return 0;
}
