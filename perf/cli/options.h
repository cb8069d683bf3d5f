// Command line of the *_perf CLIs: nccl-tests' flags with the same meaning,
// plus -A (algorithm, as CHORUS_ALGO) and -J (JSON results file).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "chorus/chorus.h"
#include "perf/cli/names.h"

namespace chorus::perf {

struct Options {
  int threads = 1;        // -t: threads per process, one rank each
  int gpus = 1;           // -g: ranks per thread (more ranks as threads here)
  size_t min_bytes = size_t{32} << 20;  // -b
  size_t max_bytes = size_t{32} << 20;  // -e
  size_t step_bytes = size_t{1} << 20;  // -i: used when step_factor <= 1
  size_t step_factor = 1;               // -f
  int iters = 20;          // -n
  int agg_iters = 1;       // -m: collectives per group call
  int warmup_iters = 5;    // -w
  int run_cycles = 1;      // -N: 0 repeats the sweep until interrupted
  int check = 1;           // -c: validation runs per size (0: none)
  std::vector<PerfOp> ops{PerfOp::kSum};          // -o
  std::vector<chorusDataType_t> types{chorusFloat32};  // -d
  int root = 0;            // -r: -1 means every rank in turn ("all")
  bool blocking = false;   // -z / -y: NULL stream, each call blocks
  int timeout_s = 0;       // -T: deadline of each wait (0: CHORUS_TIMEOUT_MS)
  bool report_cputime = false;  // -C
  int average = 1;         // -a: time across ranks: 0 rank 0, 1 avg, 2 min, 3 max
  bool local_register = false;  // -R: register the buffers (chorusCommRegister)
  bool device_buffers = false;  // -G 1: CUDA device buffers (CUDA builds)
  std::string algo;        // -A
  std::string json_path;   // -J
  int ranks_per_process() const { return threads * gpus; }
};

enum class ParseOutcome { kRun, kHelp, kError };

// Parses argv into *options. On kError, *error says why (the caller prints
// it with the usage text).
ParseOutcome ParseOptions(int argc, char** argv, Options* options, std::string* error);

// The usage text, as nccl-tests' -h.
std::string UsageText(const char* program);

// "64M" -> 67108864 (K/M/G are powers of 1024; fractions allowed as in
// nccl-tests, "0.5K"). Returns false on anything else.
bool ParseSize(const char* text, size_t* bytes);

}  // namespace chorus::perf
