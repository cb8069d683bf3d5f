// Per-epoch report: a table on stdout and, optionally, CSV rows in a file.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "base/status.h"
#include "examples/trainer/data_parallel_trainer.h"

namespace trainer {

class EpochReport {
 public:
  // Opens `csv_path` for appending (empty: no CSV); writes the header when
  // the file is new.
  static chorus::Status Open(const std::string& csv_path, EpochReport* out);
  EpochReport() = default;
  EpochReport(EpochReport&& other) noexcept : csv_(other.csv_) { other.csv_ = nullptr; }
  EpochReport& operator=(EpochReport&& other) noexcept;
  ~EpochReport();

  void PrintHeader() const;
  void Add(const EpochStats& stats, const std::string& model, int nranks, const std::string& algo,
           const std::string& mode);

 private:
  std::FILE* csv_ = nullptr;
};

// --step-trace: writes this rank's step timings to "<path>.<rank>" as CSV
// (rank,step,begin_s,computed_s,updated_s), replacing the file.
// examples/trainer/step_trace.py reads the ranks' files together.
chorus::Status WriteStepTimings(const std::string& path, int rank, const std::vector<StepTiming>& timings);

}  // namespace trainer
