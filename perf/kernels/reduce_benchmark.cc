// Throughput of the reduction kernels on 256 MiB arrays (far beyond cache,
// as in a large allreduce), for every kernel table this CPU runs, beside a
// plain `a[i] += b[i]` loop. Reduces in place (dst == a) like that loop.
// Bytes/s counts both inputs read. Targets: float32 sum >= 80% of the plain
// loop; fp16/bf16 sum >= 50% of it.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "kernels/kernel_table.h"
#include "plain_loop.h"

namespace chorus::kernels {
namespace {

constexpr size_t kArrayBytes = size_t{256} << 20;

// Small values in every type (fp16 1.0 = 0x3c00, bf16 1.0 = 0x3f80) so that
// sums stay finite and no denormal or NaN path is timed.
std::vector<uint16_t> Filled16(uint16_t bits) {
  return std::vector<uint16_t>(kArrayBytes / sizeof(uint16_t), bits);
}

void PlainLoopFloat32Sum(benchmark::State& state) {
  std::vector<float> a(kArrayBytes / sizeof(float), 1.0f), b(a.size(), 0.0f);
  for (auto _ : state) {
    perf::PlainAddInto(a.data(), b.data(), a.size());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * 2 * kArrayBytes));
}

void ReduceSum(benchmark::State& state, const KernelTable* table, DataType dtype) {
  // Adding zero keeps every value fixed however many iterations run.
  std::vector<unsigned char> a(kArrayBytes), b(kArrayBytes, 0);
  if (dtype == chorusFloat16 || dtype == chorusBfloat16) {
    const std::vector<uint16_t> ones = Filled16(dtype == chorusFloat16 ? 0x3c00 : 0x3f80);
    std::memcpy(a.data(), ones.data(), kArrayBytes);
  }
  const size_t count = kArrayBytes / DataTypeSize(dtype);
  const ReduceFn sum = table->reduce[dtype][static_cast<int>(ReduceOp::kSum)];
  for (auto _ : state) {
    sum(a.data(), a.data(), b.data(), count);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * 2 * kArrayBytes));
}

void RegisterAll() {
  benchmark::RegisterBenchmark("plain_loop/float32_sum", PlainLoopFloat32Sum)
      ->Unit(benchmark::kMillisecond);
  for (KernelIsa isa : {KernelIsa::kPortable, KernelIsa::kAvx2, KernelIsa::kAvx512}) {
    const KernelTable* table = KernelsFor(isa);
    if (table == nullptr) continue;
    for (DataType dtype : {chorusFloat32, chorusFloat16, chorusBfloat16, chorusInt32}) {
      const std::string name = std::string(table->name) + "/" + DataTypeName(dtype) + "_sum";
      benchmark::RegisterBenchmark(name.c_str(), ReduceSum, table, dtype)
          ->Unit(benchmark::kMillisecond);
    }
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
