// Gloo's allreduce (float32 sum, in place) over its TCP transport on
// loopback, timed the way all_reduce_perf times chorus, for perf/compare.
// One process per rank: RANK and WORLD_SIZE from the environment, the
// rendezvous through a FileStore in the directory given by -s (fresh per
// run, so that stale keys of an earlier run cannot match). -a ring or hd
// picks AllreduceRing or AllreduceHalvingDoubling.
//
// Output, rank 0 only: as mpi_allreduce_bench ("#" comments, then
// "<bytes> <time_us> <busbw GB/s> <wrong elements>" per size).
// Exit code 1 on wrong results or a Gloo error, 2 on bad flags.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "gloo/allreduce_halving_doubling.h"
#include "gloo/allreduce_ring.h"
#include "gloo/barrier_all_to_all.h"
#include "gloo/rendezvous/context.h"
#include "gloo/rendezvous/file_store.h"
#include "gloo/rendezvous/prefix_store.h"
#include "gloo/transport/tcp/device.h"
#include "perf/peers/bench_args.h"

namespace {

// Gloo's own deadline on every wait, so that a lost peer ends the run.
constexpr std::chrono::seconds kGlooTimeout{60};

float InputValue(size_t index, int rank) { return static_cast<float>(index % 13 + static_cast<size_t>(rank)); }

float ExpectedSum(size_t index, int nranks) {
  return static_cast<float>(index % 13 * nranks + static_cast<size_t>(nranks) * (nranks - 1) / 2);
}

int EnvInt(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::atoi(value) : fallback;
}

std::unique_ptr<gloo::Algorithm> MakeAllreduce(const std::string& algo,
                                               const std::shared_ptr<gloo::Context>& context, float* data,
                                               int count) {
  const std::vector<float*> pointers{data};
  if (algo == "hd") return std::make_unique<gloo::AllreduceHalvingDoubling<float>>(context, pointers, count);
  return std::make_unique<gloo::AllreduceRing<float>>(context, pointers, count);
}

// The mean over the ranks of one value per rank.
double MeanOverRanks(const std::shared_ptr<gloo::Context>& context, double value) {
  gloo::AllreduceRing<double> sum(context, {&value}, 1);
  sum.run();
  return value / context->size;
}

// Times one size; returns the wrong element count of a checked call first.
long long RunSize(const std::shared_ptr<gloo::Context>& context, const BenchArgs& args, size_t bytes,
                  std::vector<float>& data, double* time_us) {
  const int count = static_cast<int>(bytes / sizeof(float));
  const int rank = context->rank;
  for (int i = 0; i < count; ++i) data[i] = InputValue(i, rank);
  auto allreduce = MakeAllreduce(args.algo, context, data.data(), count);
  allreduce->run();
  long long wrong = 0;
  for (int i = 0; i < count; ++i) wrong += data[i] != ExpectedSum(i, context->size);

  // In place, the values grow by a factor nranks per call: start again
  // from the inputs so that they stay finite (and never denormal).
  for (int i = 0; i < count; ++i) data[i] = InputValue(i, rank);
  for (int i = 0; i < args.warmup_iters; ++i) allreduce->run();
  gloo::BarrierAllToAll(context).run();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < args.iters; ++i) allreduce->run();
  const std::chrono::duration<double, std::micro> elapsed = std::chrono::steady_clock::now() - start;
  *time_us = MeanOverRanks(context, elapsed.count() / args.iters);
  return static_cast<long long>(MeanOverRanks(context, static_cast<double>(wrong)) * context->size + 0.5);
}

int Run(const BenchArgs& args, int rank, int nranks) {
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto device = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore file_store(args.extra);
  gloo::rendezvous::PrefixStore store("gloo_allreduce_bench", file_store);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, nranks);
  context->setTimeout(kGlooTimeout);
  context->connectFullMesh(store, device);

  if (rank == 0) {
    std::printf("# gloo_allreduce_bench: gloo %s allreduce float sum, %d ranks, %d iters, %d warmup\n", args.algo,
                nranks, args.iters, args.warmup_iters);
    std::printf("# bytes time_us busbw_gbps wrong\n");
  }
  std::vector<float> data(args.max_bytes / sizeof(float));
  long long total_wrong = 0;
  for (size_t bytes = args.min_bytes; bytes <= args.max_bytes; bytes = NextBenchSize(&args, bytes)) {
    double time_us = 0;
    const long long wrong = RunSize(context, args, bytes, data, &time_us);
    total_wrong += wrong;
    if (rank == 0) {
      std::printf("%zu %.2f %.6f %lld\n", bytes, time_us, BusBandwidthGBps(bytes, time_us, nranks), wrong);
      std::fflush(stdout);
    }
  }
  return total_wrong == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  BenchArgs args;
  if (!ParseBenchArgs(argc, argv, &args) || args.extra == nullptr ||
      (std::string(args.algo) != "ring" && std::string(args.algo) != "hd")) {
    std::fprintf(stderr, "usage: RANK=r WORLD_SIZE=n %s -s store_dir %s\n", argv[0], BenchUsage());
    return 2;
  }
  const int rank = EnvInt("RANK", 0);
  const int nranks = EnvInt("WORLD_SIZE", 1);
  if (rank < 0 || rank >= nranks) {
    std::fprintf(stderr, "RANK=%d outside WORLD_SIZE=%d\n", rank, nranks);
    return 2;
  }
  // Gloo reports I/O errors and timeouts by exceptions; they end here with
  // their message.
  try {
    return Run(args, rank, nranks);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "rank %d: gloo error: %s\n", rank, error.what());
    return 1;
  }
}
