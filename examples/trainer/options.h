// Command-line options of chorus_trainer.
#pragma once

#include <string>

#include "base/status.h"
#include "examples/trainer/data_parallel_trainer.h"
#include "examples/trainer/elastic.h"

namespace trainer {

struct Options {
  std::string model = "lenet";
  std::string data_dir = kFashionMnistDir;
  int train_limit = 0;  // use only the first N training samples (0: all)
  int test_limit = 0;
  uint64_t seed = 1;  // weights; the data order uses seed + 1
  int ranks = 1;      // local processes (ignored under a launcher's environment)
  std::string algo = "auto";  // allreduce algorithm: auto, ring, tree, ps, hd, direct
  double bucket_mib = 0.0;    // 0: one fused AllReduce
  int blas_threads = 0;       // per rank; 0: cores / ranks, at least 1
  std::string csv_path;
  std::string step_trace_path;  // --step-trace: per-rank step timings (report.h)
  TrainOptions train;
  ElasticOptions elastic;  // --elastic, --kill-rank, --kill-at-step (elastic.h)
  bool help = false;
};

chorus::Status ParseOptions(int argc, char** argv, Options* out);
const char* UsageText();

}  // namespace trainer
