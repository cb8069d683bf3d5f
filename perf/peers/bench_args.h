/* The flags the peer benchmarks share with all_reduce_perf (-b -e -f -i -n
 * -w, sizes with K/M/G suffixes as powers of 1024) and its busbw formula.
 * Header-only and valid C and C++, so that the C MPI benchmark and the C++
 * Gloo benchmark read them alike. */
#ifndef CHORUS_PERF_PEERS_BENCH_ARGS_H_
#define CHORUS_PERF_PEERS_BENCH_ARGS_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct BenchArgs {
  size_t min_bytes;
  size_t max_bytes;
  size_t step_factor; /* -f: multiply; <= 1 means add step_bytes */
  size_t step_bytes;  /* -i */
  int iters;          /* -n */
  int warmup_iters;   /* -w */
  const char* extra;  /* -s: the Gloo store directory (NULL elsewhere) */
  const char* algo;   /* -a: the Gloo algorithm, "ring" or "hd" */
} BenchArgs;

/* "64M" -> 67108864. False on anything but digits and one K/M/G suffix. */
static inline bool ParseBenchSize(const char* text, size_t* bytes) {
  char* end = NULL;
  const unsigned long long value = strtoull(text, &end, 10);
  if (end == text) return false;
  size_t shift = 0;
  switch (*end) {
    case 'K': case 'k': shift = 10; ++end; break;
    case 'M': case 'm': shift = 20; ++end; break;
    case 'G': case 'g': shift = 30; ++end; break;
    default: break;
  }
  if (*end != '\0') return false;
  *bytes = (size_t)value << shift;
  return true;
}

static inline const char* BenchUsage(void) {
  return "[-b min] [-e max] [-f factor] [-i step] [-n iters] [-w warmup] [-s store_dir] [-a ring|hd]";
}

/* Defaults as all_reduce_perf's. Sizes round down to whole floats. */
static inline bool ParseBenchArgs(int argc, char** argv, BenchArgs* args) {
  args->min_bytes = (size_t)32 << 20;
  args->max_bytes = (size_t)32 << 20;
  args->step_factor = 1;
  args->step_bytes = (size_t)1 << 20;
  args->iters = 20;
  args->warmup_iters = 5;
  args->extra = NULL;
  args->algo = "ring";
  int opt = 0;
  size_t value = 0;
  while ((opt = getopt(argc, argv, "b:e:f:i:n:w:s:a:")) != -1) {
    switch (opt) {
      case 'b': if (!ParseBenchSize(optarg, &args->min_bytes)) return false; break;
      case 'e': if (!ParseBenchSize(optarg, &args->max_bytes)) return false; break;
      case 'f': if (!ParseBenchSize(optarg, &value)) return false; args->step_factor = value; break;
      case 'i': if (!ParseBenchSize(optarg, &args->step_bytes)) return false; break;
      case 'n': args->iters = atoi(optarg); break;
      case 'w': args->warmup_iters = atoi(optarg); break;
      case 's': args->extra = optarg; break;
      case 'a': args->algo = optarg; break;
      default: return false;
    }
  }
  args->min_bytes -= args->min_bytes % sizeof(float);
  args->max_bytes -= args->max_bytes % sizeof(float);
  return optind == argc && args->min_bytes >= sizeof(float) && args->min_bytes <= args->max_bytes &&
         args->iters > 0 && args->warmup_iters >= 0;
}

/* The size after `bytes`; always larger, so every sweep ends. */
static inline size_t NextBenchSize(const BenchArgs* args, size_t bytes) {
  size_t next = args->step_factor > 1 ? bytes * args->step_factor : bytes + args->step_bytes;
  next -= next % sizeof(float);
  return next > bytes ? next : args->max_bytes + 1;
}

/* nccl-tests' allreduce busbw: algbw * 2(n-1)/n, in GB/s (1e9 bytes). */
static inline double BusBandwidthGBps(size_t bytes, double time_us, int nranks) {
  if (time_us <= 0) return 0;
  const double algbw = (double)bytes / (time_us * 1e3);
  return algbw * 2.0 * (nranks - 1) / nranks;
}

#endif /* CHORUS_PERF_PEERS_BENCH_ARGS_H_ */
