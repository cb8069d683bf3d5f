// chorus_trainer: data-parallel CNN training on Fashion-MNIST over chorus
// collectives. See docs/trainer.md.
#include <cstdio>

#include "examples/trainer/data_parallel_trainer.h"
#include "examples/trainer/dataset.h"
#include "examples/trainer/elastic.h"
#include "examples/trainer/launch.h"
#include "examples/trainer/models.h"
#include "examples/trainer/options.h"
#include "examples/trainer/progress_bar.h"
#include "examples/trainer/report.h"

namespace trainer {
namespace {

void Truncate(Dataset* data, int limit) {
  if (limit <= 0 || limit >= data->count) return;
  data->count = limit;
  data->images.resize(static_cast<size_t>(limit) * data->sample.size());
  data->labels.resize(limit);
}

int Fail(const chorus::Status& status) {
  std::fprintf(stderr, "chorus_trainer: %s\n", status.message().c_str());
  return 1;
}

int RunRank(const Options& options, const Dataset& train, const Dataset& test, chorusComm_t comm) {
  std::unique_ptr<Model> model;
  chorus::Status status = MakeModel(options.model, options.seed, &model);
  if (!status.ok()) return Fail(status);
  std::unique_ptr<DataParallelTrainer> trainer;
  status = DataParallelTrainer::Create(options.train, model.get(), &train, &test, comm, &trainer);
  if (!status.ok()) return Fail(status);
  int rank = 0, nranks = 1;
  if (comm != nullptr) {
    (void)chorusCommUserRank(comm, &rank);
    (void)chorusCommCount(comm, &nranks);
  }
  StepTraceFile step_trace;
  status = StepTraceFile::Open(options.step_trace_path, rank, &step_trace);
  if (!status.ok()) return Fail(status);
  EpochReport report;
  if (rank == 0) {
    status = EpochReport::Open(options.csv_path, &report);
    if (!status.ok()) return Fail(status);
    std::printf("%s on %d train / %d test images, %d rank(s), global batch %d (%d per rank), %d steps/epoch, "
                "allreduce %s, %s, mode %s\n%s",
                options.model.c_str(), train.count, test.count, nranks, options.train.global_batch,
                trainer->local_batch(), trainer->steps_per_epoch(), options.algo.c_str(),
                options.train.bucket_bytes == 0 ? "one fused buffer" : "bucketed",
                options.train.exchange.mode.c_str(), model->Describe().c_str());
    report.PrintHeader();
  }
  status = trainer->SynchronizeWeights();
  if (!status.ok()) return Fail(status);
  trainer->set_record_step_timings(!options.step_trace_path.empty());
  ProgressBar progress(stderr);  // rank 0, on a terminal only
  if (rank == 0 && progress.enabled()) trainer->set_step_observer([&progress](int done) { progress.Update(done); });
  for (int epoch = 0; epoch < options.train.epochs; ++epoch) {
    EpochStats stats;
    progress.StartEpoch(epoch, options.train.epochs, trainer->steps_per_epoch(), options.train.global_batch);
    status = trainer->TrainEpoch(epoch, &stats);
    progress.Clear();
    if (!status.ok()) return Fail(status);
    if (rank == 0) report.Add(stats, options.model, nranks, options.algo, options.train.exchange.mode);
  }
  status = step_trace.Write(trainer->step_timings());
  if (!status.ok()) return Fail(status);
  return 0;
}

int Main(int argc, char** argv) {
  Options options;
  chorus::Status status = ParseOptions(argc, argv, &options);
  if (!status.ok()) return Fail(status);
  if (options.help) {
    std::fputs(UsageText(), stdout);
    return 0;
  }
  // Loaded before the ranks fork so that they share it.
  Dataset train, test;
  status = LoadFashionMnist(options.data_dir, Split::kTrain, &train);
  if (status.ok()) status = LoadFashionMnist(options.data_dir, Split::kTest, &test);
  if (!status.ok()) return Fail(status);
  Truncate(&train, options.train_limit);
  Truncate(&test, options.test_limit);
  LaunchOptions launch{options.ranks, options.algo, options.blas_threads};
  if (options.elastic.enabled) {
    launch.elastic = true;
    return Launch(launch, [&](chorusComm_t comm) {
      return RunElasticRank(options.model, options.seed, options.train, options.elastic, train, test, comm);
    });
  }
  return Launch(launch, [&](chorusComm_t comm) { return RunRank(options, train, test, comm); });
}

}  // namespace
}  // namespace trainer

int main(int argc, char** argv) { return trainer::Main(argc, argv); }
