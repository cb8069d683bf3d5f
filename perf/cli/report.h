// Output in nccl-tests' shape, written by rank 0 only: the header, the
// "# Using devices" lines, the column header, one row per size (out-of-place
// then in-place group), the summary lines; plus the same results as JSON
// (-J).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "perf/cli/collectives.h"
#include "perf/cli/options.h"
#include "perf/cli/progress.h"

namespace chorus::perf {

// One rank's identity for the "# Using devices" lines.
struct RankIdentity {
  int rank = 0;
  int pid = 0;
  int local_index = 0;  // the rank's index in its process (the "device")
  std::string host;
};

// One measurement: a size in one placement.
struct GroupResult {
  double time_us = 0;
  double algbw = 0;  // GB/s (1e9 bytes)
  double busbw = 0;
  long long wrong = -1;  // -1: not checked (-c 0), printed "N/A"
};

struct RowResult {
  size_t bytes = 0;
  size_t count = 0;
  std::string type;
  std::string op;
  int root = -1;
  GroupResult out_of_place;
  GroupResult in_place;
};

class Reporter {
 public:
  Reporter(CollectiveKind kind, const Options& options, int nranks, int processes);

  void PrintHeader(const std::vector<RankIdentity>& ranks);
  void PrintRow(const RowResult& row);
  void ShowProgress(const std::string& text) { progress_.Show(text); }
  // Summary lines; returns false when -J could not be written.
  [[nodiscard]] bool Finish(long long failed_results);

  // Mean busbw over every printed group, as nccl-tests.
  double AverageBusBandwidth() const { return busbw_count_ ? busbw_sum_ / busbw_count_ : 0; }

 private:
  [[nodiscard]] bool WriteJson(long long failed_results) const;

  CollectiveKind kind_;
  const Options& options_;
  int nranks_;
  int processes_;
  std::vector<RowResult> rows_;
  double busbw_sum_ = 0;
  long long busbw_count_ = 0;
  ProgressLine progress_;
};

}  // namespace chorus::perf
