// Elastic training (examples/trainer/elastic.h): three ranks as processes
// train on generated images, one is SIGKILLed mid-training; the two
// survivors shrink, redo the failed step and finish every epoch on two ranks
// with identical weights and the accuracy of a one-process run of the same
// global batches.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>
#include <vector>

#include "examples/trainer/elastic.h"
#include "examples/trainer/gemm.h"
#include "tests/trainer/ranks_as_threads.h"

namespace trainer_test {
namespace {

constexpr int kRanks = 3;
constexpr int kVictim = 1;
constexpr int kKillAtStep = 7;  // SmallRun: 2 epochs x 10 steps of 32 images
constexpr int kTimeoutMs = 5000;
constexpr auto kParentDeadline = std::chrono::seconds(60);

// What a rank reports to the parent through its pipe.
struct Report {
  int ok = 0;
  int epochs = 0;
  int final_rank = -1, final_ranks = 0;
  int recoveries = 0;
  int steps = 0;
  double test_accuracy = 0.0;
  double weight_sum = 0.0;  // exact fingerprint of the final weights
};

double WeightSum(const std::vector<float>& weights) {
  double sum = 0.0;
  for (size_t i = 0; i < weights.size(); ++i) sum += weights[i] * static_cast<double>(i % 7 + 1);
  return sum;
}

Report TrainRank(const chorusUniqueId& id, int rank, const Dataset& train, const Dataset& test) {
  Report report;
  SetBlasThreads(1);
  chorusConfig_t config = CHORUS_CONFIG_INITIALIZER;
  config.timeoutMs = kTimeoutMs;
  chorusComm_t comm = nullptr;
  if (chorusCommInitRankConfig(&comm, kRanks, id, rank, &config) != chorusSuccess) return report;
  ElasticOptions elastic;
  elastic.enabled = true;
  elastic.kill_rank = kVictim;
  elastic.kill_at_step = kKillAtStep;
  elastic.print = false;
  std::unique_ptr<Model> model = MakeLeNet(/*seed=*/5, /*width=*/0.25);
  ElasticResult result;
  chorus::Status status = TrainElastic(SmallRun(), elastic, model.get(), train, &test, comm, &result);
  (void)chorusCommDestroy(comm);
  if (!status.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", rank, status.message().c_str());
    return report;
  }
  report.ok = 1;
  report.epochs = static_cast<int>(result.epochs.size());
  report.final_rank = result.final_rank;
  report.final_ranks = result.final_ranks;
  report.recoveries = result.recoveries;
  report.steps = result.steps;
  report.test_accuracy = result.epochs.empty() ? 0.0 : result.epochs.back().test_accuracy;
  report.weight_sum = WeightSum(result.weights);
  return report;
}

struct Child {
  pid_t pid = -1;
  int pipe = -1;
  int status = 0;
  Report report;
  bool reported = false;
};

TEST(TrainerElastic, SurvivorsOfASigkillFinishOnTwoRanks) {
  const Dataset train = MakeBands(320, 1);
  const Dataset test = MakeBands(100, 2);
  chorusUniqueId id;
  ASSERT_EQ(chorusGetUniqueId(&id), chorusSuccess) << chorusGetLastError(nullptr);
  std::fflush(nullptr);
  std::vector<Child> children(kRanks);
  for (int rank = 0; rank < kRanks; ++rank) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      const Report report = TrainRank(id, rank, train, test);
      const ssize_t written = write(fds[1], &report, sizeof(report));
      _exit(written == static_cast<ssize_t>(sizeof(report)) ? 0 : 1);
    }
    close(fds[1]);
    children[rank].pid = pid;
    children[rank].pipe = fds[0];
  }
  // Wait for every child, killing them all at the deadline (a hang).
  const auto deadline = std::chrono::steady_clock::now() + kParentDeadline;
  bool hung = false;
  for (Child& child : children) {
    while (waitpid(child.pid, &child.status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        hung = true;
        for (Child& other : children) kill(other.pid, SIGKILL);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    child.reported = read(child.pipe, &child.report, sizeof(child.report)) == sizeof(child.report);
    close(child.pipe);
  }
  ASSERT_FALSE(hung) << "a rank hung";

  // The same global batches on one process.
  SetBlasThreads(1);
  std::unique_ptr<Model> model = MakeLeNet(/*seed=*/5, /*width=*/0.25);
  ElasticOptions single;
  single.print = false;
  ElasticResult baseline;
  const chorus::Status status = TrainElastic(SmallRun(), single, model.get(), train, &test, nullptr, &baseline);
  ASSERT_TRUE(status.ok()) << status.message();
  ASSERT_EQ(baseline.epochs.size(), 2u);
  std::printf("one process: test accuracy %.3f\n", baseline.epochs.back().test_accuracy);

  ASSERT_TRUE(WIFSIGNALED(children[kVictim].status) && WTERMSIG(children[kVictim].status) == SIGKILL);
  for (int rank = 0; rank < kRanks; ++rank) {
    if (rank == kVictim) continue;
    const Report& report = children[rank].report;
    ASSERT_TRUE(children[rank].reported && report.ok) << "rank " << rank << " did not finish";
    std::printf("rank %d: now %d of %d, %d shrink(s), %d steps, test accuracy %.3f\n", rank, report.final_rank,
                report.final_ranks, report.recoveries, report.steps, report.test_accuracy);
    EXPECT_EQ(report.epochs, 2);
    EXPECT_EQ(report.steps, 20);
    EXPECT_EQ(report.final_ranks, 2);
    EXPECT_EQ(report.final_rank, rank < kVictim ? rank : rank - 1);
    EXPECT_EQ(report.recoveries, 1);
    EXPECT_GE(report.test_accuracy, 0.8);
    // Only the summation order differs from the one-process run.
    EXPECT_NEAR(report.test_accuracy, baseline.epochs.back().test_accuracy, 0.03);
    EXPECT_NEAR(report.weight_sum, WeightSum(baseline.weights), 1e-3 * std::abs(WeightSum(baseline.weights)) + 1e-3);
  }
  // Resynchronised, then identical steps: bit-identical weights.
  EXPECT_EQ(children[0].report.weight_sum, children[2].report.weight_sum);
}

}  // namespace
}  // namespace trainer_test
