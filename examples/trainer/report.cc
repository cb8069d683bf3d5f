#include "examples/trainer/report.h"

#include <cerrno>
#include <cstring>
#include <utility>

namespace trainer {

chorus::Status EpochReport::Open(const std::string& csv_path, EpochReport* out) {
  EpochReport report;
  if (!csv_path.empty()) {
    std::FILE* existing = std::fopen(csv_path.c_str(), "r");
    const bool is_new = existing == nullptr;
    if (existing != nullptr) std::fclose(existing);
    report.csv_ = std::fopen(csv_path.c_str(), "a");
    if (report.csv_ == nullptr) {
      return chorus::InvalidArgument("cannot open --csv ", csv_path, ": ", std::strerror(errno));
    }
    if (is_new) {
      std::fprintf(report.csv_,
                   "model,ranks,algo,epoch,lr,train_loss,train_accuracy,test_accuracy,seconds,"
                   "compute_seconds,communication_seconds,images_per_second,mode,hidden_communication_seconds,"
                   "wire_bytes,uncompressed_bytes,extra_bytes,steps,gradient_bytes,steady_seconds,steady_steps\n");
    }
  }
  *out = std::move(report);
  return chorus::Status::Ok();
}

EpochReport& EpochReport::operator=(EpochReport&& other) noexcept {
  std::swap(csv_, other.csv_);
  return *this;
}

EpochReport::~EpochReport() {
  if (csv_ != nullptr) std::fclose(csv_);
}

void EpochReport::PrintHeader() const {
  std::printf("%5s %9s %10s %9s %9s %8s %9s %9s %10s %8s %10s\n", "epoch", "lr", "loss", "train%", "test%",
              "time_s", "compute_s", "comm_s", "images/s", "ms/step", "grad_MB");
}

void EpochReport::Add(const EpochStats& s, const std::string& model, int nranks, const std::string& algo,
                      const std::string& mode) {
  // grad_MB: this rank's gradient payload in the epoch (ExchangeCounters::gradient_bytes).
  std::printf("%5d %9.5f %10.5f %9.2f %9.2f %8.1f %9.1f %9.2f %10.0f %8.2f %10.3f\n", s.epoch + 1,
              s.learning_rate, s.train_loss, 100 * s.train_accuracy, 100 * s.test_accuracy, s.seconds,
              s.compute_seconds, s.communication_seconds, s.images_per_second,
              s.steps > 0 ? 1e3 * s.seconds / s.steps : 0.0, s.gradient_bytes / 1e6);
  if (s.steady_steps != s.steps && s.steady_steps > 0) {
    std::printf("      steps %d-%d: %.2f ms/step\n", s.steps - s.steady_steps + 1, s.steps,
                1e3 * s.steady_seconds / s.steady_steps);
  }
  if (s.hidden_communication_seconds > 0) {
    std::printf("      %s: %.2f s of communication ran under computation (upper bound)\n", mode.c_str(),
                s.hidden_communication_seconds);
  }
  if (s.uncompressed_bytes > 0) {
    std::printf("      %s: %.3f MB on the wire for %.3f MB of float32 AllReduce (%.1fx fewer)", mode.c_str(),
                s.wire_bytes / 1e6, s.uncompressed_bytes / 1e6,
                s.wire_bytes > 0 ? static_cast<double>(s.uncompressed_bytes) / s.wire_bytes : 0.0);
    if (s.extra_bytes > 0) std::printf(", plus %.3f MB plain", s.extra_bytes / 1e6);
    std::printf(" per rank\n");
  } else if (s.extra_bytes > 0) {
    std::printf("      %s: %.3f MB sent per rank\n", mode.c_str(), s.extra_bytes / 1e6);
  }
  std::fflush(stdout);
  if (csv_ == nullptr) return;
  std::fprintf(csv_, "%s,%d,%s,%d,%.6g,%.6f,%.6f,%.6f,%.3f,%.3f,%.3f,%.1f,%s,%.3f,%llu,%llu,%llu,%d,%llu,%.3f,%d\n", model.c_str(),
               nranks, algo.c_str(), s.epoch + 1, s.learning_rate, s.train_loss, s.train_accuracy, s.test_accuracy,
               s.seconds, s.compute_seconds, s.communication_seconds, s.images_per_second, mode.c_str(),
               s.hidden_communication_seconds, s.wire_bytes, s.uncompressed_bytes, s.extra_bytes, s.steps,
               s.gradient_bytes, s.steady_seconds, s.steady_steps);
  std::fflush(csv_);
}

chorus::Status StepTraceFile::Open(const std::string& path, int rank, StepTraceFile* out) {
  StepTraceFile trace;
  if (!path.empty()) {
    trace.name_ = path + "." + std::to_string(rank);
    trace.rank_ = rank;
    trace.file_.reset(std::fopen(trace.name_.c_str(), "w"));
    if (trace.file_ == nullptr) {
      return chorus::InvalidArgument("cannot open --step-trace ", trace.name_, ": ", std::strerror(errno));
    }
  }
  *out = std::move(trace);
  return chorus::Status::Ok();
}

chorus::Status StepTraceFile::Write(const std::vector<StepTiming>& timings) {
  if (file_ == nullptr) return chorus::Status::Ok();
  std::fprintf(file_.get(), "rank,step,begin_s,computed_s,updated_s\n");
  for (const StepTiming& t : timings) {
    std::fprintf(file_.get(), "%d,%d,%.6f,%.6f,%.6f\n", rank_, t.step, t.begin, t.computed, t.updated);
  }
  const bool failed = std::ferror(file_.get()) != 0;
  if (std::fclose(file_.release()) != 0 || failed) return chorus::InvalidArgument("cannot write --step-trace ", name_);
  return chorus::Status::Ok();
}

}  // namespace trainer
