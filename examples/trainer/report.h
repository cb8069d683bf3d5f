// Per-epoch report: a table on stdout and, optionally, CSV rows in a file.
#pragma once

#include <cstdio>
#include <memory>
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

// --step-trace: this rank's step timings as CSV in "<path>.<rank>"
// (rank,step,begin_s,computed_s,updated_s). Opened before training, so a bad
// path fails before any work; examples/trainer/step_trace.py reads the ranks'
// files together.
class StepTraceFile {
 public:
  // Creates (or empties) the file; an empty `path` gives a file that writes nothing.
  static chorus::Status Open(const std::string& path, int rank, StepTraceFile* out);
  chorus::Status Write(const std::vector<StepTiming>& timings);

 private:
  struct Closer {
    void operator()(std::FILE* file) const { std::fclose(file); }
  };
  std::unique_ptr<std::FILE, Closer> file_;
  std::string name_;
  int rank_ = 0;
};

}  // namespace trainer
