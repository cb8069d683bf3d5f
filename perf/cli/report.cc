#include "perf/cli/report.h"

#include <cmath>
#include <cstdio>
#include <memory>

#include "chorus/chorus.h"

namespace chorus::perf {

namespace {

// nccl-tests' time column: fewer decimals as the time grows.
std::string FormatTime(double us) {
  char text[32];
  if (us >= 10000.0) {
    std::snprintf(text, sizeof(text), "%7.0f", us);
  } else if (us >= 100.0) {
    std::snprintf(text, sizeof(text), "%7.1f", us);
  } else {
    std::snprintf(text, sizeof(text), "%7.2f", us);
  }
  return text;
}

std::string FormatGroup(const GroupResult& group) {
  char text[96];
  if (group.wrong < 0) {
    std::snprintf(text, sizeof(text), "  %7s  %6.2f  %6.2f  %5s", FormatTime(group.time_us).c_str(), group.algbw,
                  group.busbw, "N/A");
  } else {
    std::snprintf(text, sizeof(text), "  %7s  %6.2f  %6.2f  %5g", FormatTime(group.time_us).c_str(), group.algbw,
                  group.busbw, static_cast<double>(group.wrong));
  }
  return text;
}

std::string JsonString(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// JSON has no inf/nan: a zero-time run writes null.
std::string JsonNumber(double value) {
  if (!std::isfinite(value)) return "null";
  char text[40];
  std::snprintf(text, sizeof(text), "%.6g", value);
  return text;
}

std::string JsonGroup(const GroupResult& group) {
  return "{\"time_us\": " + JsonNumber(group.time_us) + ", \"algbw_gbps\": " + JsonNumber(group.algbw) +
         ", \"busbw_gbps\": " + JsonNumber(group.busbw) +
         ", \"wrong\": " + (group.wrong < 0 ? std::string("null") : std::to_string(group.wrong)) + "}";
}

}  // namespace

Reporter::Reporter(CollectiveKind kind, const Options& options, int nranks, int processes)
    : kind_(kind), options_(options), nranks_(nranks), processes_(processes) {}

void Reporter::PrintHeader(const std::vector<RankIdentity>& ranks) {
  const bool by_factor = options_.step_factor > 1;
  std::printf("# chorus %d.%d.%d %s_perf: %d ranks in %d process%s, algo %s\n", CHORUS_MAJOR, CHORUS_MINOR,
              CHORUS_PATCH, InfoOf(kind_).name, nranks_, processes_, processes_ == 1 ? "" : "es",
              options_.algo.empty() ? "default" : options_.algo.c_str());
  std::printf(
      "# nThread %d nGpus %d minBytes %zu maxBytes %zu step: %zu(%s) warmup iters: %d iters: %d agg iters: %d "
      "validation: %d graph: %d\n",
      options_.threads, options_.gpus, options_.min_bytes, options_.max_bytes,
      by_factor ? options_.step_factor : options_.step_bytes, by_factor ? "factor" : "bytes", options_.warmup_iters,
      options_.iters, options_.agg_iters, options_.check, 0);
  if (options_.blocking) std::printf("# Blocking Enabled: wait for completion and barrier after each collective \n");
  std::printf("#\n# Using devices\n");
  for (const RankIdentity& rank : ranks) {
    std::printf("#  Rank %2d Group %2d Pid %6d on %10s device %2d [0x%02x] %s\n", rank.rank, 0, rank.pid,
                rank.host.c_str(), rank.local_index, 0, "CPU (host memory)");
  }
  const char* time = options_.report_cputime ? "cputime" : "time";
  std::printf("#\n");
  std::printf("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "",
              "", "", "", "");
  std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n", "size", "count", "type",
              "redop", "root", time, "algbw", "busbw", "#wrong", time, "algbw", "busbw", "#wrong");
  std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n", "(B)", "(elements)", "", "",
              "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  std::fflush(stdout);
}

void Reporter::PrintRow(const RowResult& row) {
  progress_.Clear();
  std::printf("%12zu  %12zu  %8s  %6s  %6d%s%s\n", row.bytes, row.count, row.type.c_str(), row.op.c_str(), row.root,
              FormatGroup(row.out_of_place).c_str(), FormatGroup(row.in_place).c_str());
  std::fflush(stdout);
  busbw_sum_ += row.out_of_place.busbw + row.in_place.busbw;
  busbw_count_ += 2;
  rows_.push_back(row);
}

bool Reporter::Finish(long long failed_results) {
  progress_.Clear();
  std::printf("# Out of bounds values : %lld %s\n", failed_results, failed_results ? "FAILED" : "OK");
  std::printf("# Avg bus bandwidth    : %g \n", AverageBusBandwidth());
  std::printf("#\n");
  std::fflush(stdout);
  if (options_.json_path.empty()) return true;
  return WriteJson(failed_results);
}

bool Reporter::WriteJson(long long failed_results) const {
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(options_.json_path.c_str(), "w"), &std::fclose);
  if (!file) {
    std::fprintf(stderr, "cannot write JSON results to '%s'\n", options_.json_path.c_str());
    return false;
  }
  FILE* out = file.get();
  std::fprintf(out, "{\n  \"benchmark\": %s,\n", JsonString(std::string(InfoOf(kind_).name) + "_perf").c_str());
  std::fprintf(out, "  \"library\": \"chorus %d.%d.%d\",\n", CHORUS_MAJOR, CHORUS_MINOR, CHORUS_PATCH);
  std::fprintf(out, "  \"nranks\": %d,\n  \"processes\": %d,\n  \"nThread\": %d,\n  \"nGpus\": %d,\n", nranks_,
               processes_, options_.threads, options_.gpus);
  std::fprintf(out, "  \"minBytes\": %zu,\n  \"maxBytes\": %zu,\n  \"stepFactor\": %zu,\n  \"stepBytes\": %zu,\n",
               options_.min_bytes, options_.max_bytes, options_.step_factor, options_.step_bytes);
  std::fprintf(out, "  \"warmupIters\": %d,\n  \"iters\": %d,\n  \"aggIters\": %d,\n  \"validation\": %d,\n",
               options_.warmup_iters, options_.iters, options_.agg_iters, options_.check);
  std::fprintf(out, "  \"blocking\": %s,\n  \"average\": %d,\n  \"algo\": %s,\n", options_.blocking ? "true" : "false",
               options_.average, options_.algo.empty() ? "null" : JsonString(options_.algo).c_str());
  std::fprintf(out, "  \"results\": [");
  for (size_t i = 0; i < rows_.size(); ++i) {
    const RowResult& row = rows_[i];
    std::fprintf(out,
                 "%s\n    {\"size\": %zu, \"count\": %zu, \"type\": %s, \"redop\": %s, \"root\": %d,\n"
                 "     \"out_of_place\": %s,\n     \"in_place\": %s}",
                 i ? "," : "", row.bytes, row.count, JsonString(row.type).c_str(), JsonString(row.op).c_str(),
                 row.root, JsonGroup(row.out_of_place).c_str(), JsonGroup(row.in_place).c_str());
  }
  std::fprintf(out, "\n  ],\n  \"outOfBounds\": %lld,\n  \"avgBusBandwidth\": %s\n}\n", failed_results,
               JsonNumber(AverageBusBandwidth()).c_str());
  return std::fflush(out) == 0;
}

}  // namespace chorus::perf
