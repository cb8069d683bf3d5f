// Throughput of the bulk fp16/bf16 <-> float32 conversions (kernels/convert.h)
// for every kernel table this CPU runs, beside the per-element loops that
// chorusAllReduceCompressed's 16-bit wire used before them
// (scalar_convert_loop.h). 431,080 elements: the trainer's LeNet gradient.
// Items/s counts elements; inputs are gradient-like (normal, sigma 1e-2).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "base/half.h"
#include "kernels/kernel_table.h"
#include "scalar_convert_loop.h"

namespace chorus::kernels {
namespace {

constexpr size_t kCount = 431080;

struct Buffers {
  std::vector<float> floats;
  std::vector<uint16_t> halves;
  std::vector<uint16_t> bfloats;
};

const Buffers& Inputs() {
  static const Buffers buffers = [] {
    Buffers b;
    std::mt19937 rng(6);
    std::normal_distribution<float> gradient(0.0f, 1e-2f);
    for (size_t i = 0; i < kCount; ++i) {
      b.floats.push_back(gradient(rng));
      b.halves.push_back(FloatToHalf(b.floats.back()));
      b.bfloats.push_back(FloatToBfloat16(b.floats.back()));
    }
    return b;
  }();
  return buffers;
}

void Narrow(benchmark::State& state, NarrowFn narrow) {
  std::vector<uint16_t> out(kCount);
  for (auto _ : state) {
    narrow(out.data(), Inputs().floats.data(), kCount);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kCount));
}

void Widen(benchmark::State& state, WidenFn widen, bool half) {
  std::vector<float> out(kCount);
  const std::vector<uint16_t>& in = half ? Inputs().halves : Inputs().bfloats;
  for (auto _ : state) {
    widen(out.data(), in.data(), kCount);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kCount));
}

// The old loops take the format as an argument, as SixteenBitSum passed it.
void ScalarFp16Narrow(uint16_t* d, const float* s, size_t n) { perf::ScalarNarrowLoop(d, s, n, true); }
void ScalarBf16Narrow(uint16_t* d, const float* s, size_t n) { perf::ScalarNarrowLoop(d, s, n, false); }
void ScalarFp16Widen(float* d, const uint16_t* s, size_t n) { perf::ScalarWidenLoop(d, s, n, true); }
void ScalarBf16Widen(float* d, const uint16_t* s, size_t n) { perf::ScalarWidenLoop(d, s, n, false); }

void RegisterSet(const std::string& prefix, NarrowFn fp16_narrow, WidenFn fp16_widen, NarrowFn bf16_narrow,
                 WidenFn bf16_widen) {
  benchmark::RegisterBenchmark((prefix + "/fp16_narrow").c_str(), Narrow, fp16_narrow)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark((prefix + "/fp16_widen").c_str(), Widen, fp16_widen, true)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark((prefix + "/bf16_narrow").c_str(), Narrow, bf16_narrow)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark((prefix + "/bf16_widen").c_str(), Widen, bf16_widen, false)
      ->Unit(benchmark::kMicrosecond);
}

void RegisterAll() {
  RegisterSet("scalar_loop", &ScalarFp16Narrow, &ScalarFp16Widen, &ScalarBf16Narrow, &ScalarBf16Widen);
  for (KernelIsa isa : {KernelIsa::kPortable, KernelIsa::kAvx2, KernelIsa::kAvx512}) {
    const KernelTable* table = KernelsFor(isa);
    if (table == nullptr) continue;
    RegisterSet(table->name, table->float_to_half, table->half_to_float, table->float_to_bfloat16,
                table->bfloat16_to_float);
  }
}

}  // namespace
}  // namespace chorus::kernels

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  chorus::kernels::RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
