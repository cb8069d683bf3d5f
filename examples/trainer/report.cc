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
                   "compute_seconds,communication_seconds,images_per_second\n");
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
  std::printf("%5s %9s %10s %9s %9s %8s %9s %9s %10s\n", "epoch", "lr", "loss", "train%", "test%", "time_s",
              "compute_s", "comm_s", "images/s");
}

void EpochReport::Add(const EpochStats& s, const std::string& model, int nranks, const std::string& algo) {
  std::printf("%5d %9.5f %10.5f %9.2f %9.2f %8.1f %9.1f %9.2f %10.0f\n", s.epoch + 1, s.learning_rate,
              s.train_loss, 100 * s.train_accuracy, 100 * s.test_accuracy, s.seconds, s.compute_seconds,
              s.communication_seconds, s.images_per_second);
  std::fflush(stdout);
  if (csv_ == nullptr) return;
  std::fprintf(csv_, "%s,%d,%s,%d,%.6g,%.6f,%.6f,%.6f,%.3f,%.3f,%.3f,%.1f\n", model.c_str(), nranks, algo.c_str(),
               s.epoch + 1, s.learning_rate, s.train_loss, s.train_accuracy, s.test_accuracy, s.seconds,
               s.compute_seconds, s.communication_seconds, s.images_per_second);
  std::fflush(csv_);
}

}  // namespace trainer
