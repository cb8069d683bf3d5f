// chorusAllReduceCompressed with the fp16/bf16 wire (Pipe-SGD's
// --fp16-wire) on 2 ranks as threads of this process, 431,080 floats (the
// trainer's LeNet gradient), beside the same call made the way SixteenBitSum
// did it before the bulk conversions: the per-element scalar loops
// (scalar_convert_loop.h) around a 16-bit AllReduce. Before timing, both ways
// run once on gradient-like data with specials (NaN, inf, subnormals, -0,
// overflow) and must agree bit for bit. The counter rank_cpu_us is each
// rank's thread CPU per call, averaged over the ranks.
#include <benchmark/benchmark.h>

#include <time.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "chorus/chorus.h"
#include "scalar_convert_loop.h"

namespace chorus {
namespace {

constexpr size_t kCount = 431080;
constexpr int kRanks = 2;

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct Rank {
  chorusComm_t comm = nullptr;
  std::array<chorusCompressState_t, 2> states{};  // fp16, bf16
  std::vector<float> x, out;
  std::vector<uint16_t> wire;
};

std::array<Rank, kRanks>& Ranks() {
  static std::array<Rank, kRanks> ranks;
  return ranks;
}

// What SixteenBitSum did before kernels/convert.h.
chorusResult_t ScalarWire(Rank& r, bool half) {
  perf::ScalarNarrowLoop(r.wire.data(), r.x.data(), kCount, half);
  const chorusResult_t result = chorusAllReduce(r.wire.data(), r.wire.data(), kCount,
                                                half ? chorusFloat16 : chorusBfloat16, chorusSum, r.comm, nullptr);
  perf::ScalarWidenLoop(r.out.data(), r.wire.data(), kCount, half);
  return result;
}

chorusResult_t KernelWire(Rank& r, bool half) {
  return chorusAllReduceCompressed(r.x.data(), r.out.data(), kCount, chorusFloat32, r.states[half ? 0 : 1], r.comm,
                                   nullptr);
}

void Wire(benchmark::State& state, bool kernels, bool half) {
  Rank& r = Ranks()[state.thread_index()];
  const double cpu_start = ThreadCpuSeconds();
  for (auto _ : state) {
    const chorusResult_t result = kernels ? KernelWire(r, half) : ScalarWire(r, half);
    if (result != chorusSuccess) {
      state.SkipWithError(chorusGetErrorString(result));
      break;
    }
  }
  const double per_call_us = 1e6 * (ThreadCpuSeconds() - cpu_start) / static_cast<double>(state.iterations());
  state.counters["rank_cpu_us"] = benchmark::Counter(per_call_us, benchmark::Counter::kAvgThreads);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kCount));
}

// Runs `call` on every rank at once, each on its own thread.
template <typename Call>
bool OnEveryRank(Call call) {
  std::array<chorusResult_t, kRanks> results{};
  std::vector<std::thread> threads;
  for (int rank = 0; rank < kRanks; ++rank) {
    threads.emplace_back([&, rank] { results[rank] = call(Ranks()[rank]); });
  }
  for (std::thread& t : threads) t.join();
  for (chorusResult_t result : results) {
    if (result != chorusSuccess) return false;
  }
  return true;
}

bool SetUp() {
  std::array<chorusComm_t, kRanks> comms{};
  if (chorusCommInitAll(comms.data(), kRanks, nullptr) != chorusSuccess) return false;
  std::mt19937 rng(430);
  std::normal_distribution<float> gradient(0.0f, 1e-2f);
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), 1e-40f, -0.0f, 7e4f, 65520.0f, 3e-8f};
  for (int rank = 0; rank < kRanks; ++rank) {
    Rank& r = Ranks()[rank];
    r.comm = comms[rank];
    for (size_t i = 0; i < kCount; ++i) r.x.push_back(gradient(rng));
    for (size_t i = 0; i < std::size(specials); ++i) r.x[1000 * i + rank] = specials[i];
    r.out.assign(kCount, 0.0f);
    r.wire.assign(kCount, 0);
    for (int m = 0; m < 2; ++m) {
      const chorusCompression_t mode = m == 0 ? chorusCompressFp16 : chorusCompressBf16;
      if (chorusCompressStateCreate(&r.states[m], mode, kCount, chorusFloat32, r.comm) != chorusSuccess) return false;
    }
  }
  // Both ways, both formats: bit-identical results on every rank.
  for (bool half : {true, false}) {
    if (!OnEveryRank([&](Rank& r) { return ScalarWire(r, half); })) return false;
    std::array<std::vector<float>, kRanks> scalar;
    for (int rank = 0; rank < kRanks; ++rank) scalar[rank] = Ranks()[rank].out;
    if (!OnEveryRank([&](Rank& r) { return KernelWire(r, half); })) return false;
    for (int rank = 0; rank < kRanks; ++rank) {
      const bool same = std::memcmp(scalar[rank].data(), Ranks()[rank].out.data(), kCount * sizeof(float)) == 0;
      std::printf("%s wire, rank %d: kernel result %s the scalar loops' bit for bit\n", half ? "fp16" : "bf16", rank,
                  same ? "equals" : "DIFFERS FROM");
      if (!same) return false;
    }
  }
  return true;
}

void TearDown() {
  for (Rank& r : Ranks()) {
    for (chorusCompressState_t s : r.states) chorusCompressStateDestroy(s);
    chorusCommDestroy(r.comm);
  }
}

void RegisterAll() {
  for (bool half : {true, false}) {
    const char* format = half ? "fp16" : "bf16";
    for (bool kernels : {false, true}) {
      const std::string name = std::string(kernels ? "kernel_wire/" : "scalar_wire/") + format;
      benchmark::RegisterBenchmark(name.c_str(), Wire, kernels, half)
          ->Threads(kRanks)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

}  // namespace
}  // namespace chorus

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (!chorus::SetUp()) {
    std::fprintf(stderr, "set-up failed, or the kernel and scalar results differ\n");
    return 1;
  }
  chorus::RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  chorus::TearDown();
  return 0;
}
