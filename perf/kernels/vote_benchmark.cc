// Throughput of the sign majority vote's codecs (chorusCompressSignVote,
// src/lossy/compression_codecs.cc) beside the original one-bit-at-a-time
// versions (tests/lossy/vote_reference.h): decode of p ranks' packed bits
// into -1/0/+1 floats, packing of signs, and the int8 quantizer. 431,080 parameters, the
// trainer's LeNet. Items/s counts parameters (one per rank for the decode).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "lossy/compression_codecs.h"
#include "lossy/compression_stages.h"
#include "tests/lossy/vote_reference.h"

namespace chorus {
namespace {

constexpr size_t kCount = 431080;

using DecodeFn = void (*)(const uint8_t*, size_t, int, size_t, float*);
using PackFn = void (*)(const float*, size_t, uint8_t*);

void Decode(benchmark::State& state, DecodeFn decode) {
  const int nranks = static_cast<int>(state.range(0));
  const size_t stride = PackedBitBytes(kCount);
  std::vector<uint8_t> bits(stride * nranks);
  std::mt19937_64 rng(1);
  for (uint8_t& b : bits) b = static_cast<uint8_t>(rng());
  std::vector<float> out(kCount);
  for (auto _ : state) {
    decode(bits.data(), stride, nranks, kCount, out.data());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kCount * nranks));
}

void Pack(benchmark::State& state, PackFn pack) {
  std::vector<float> x(kCount);
  std::mt19937_64 rng(2);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (float& v : x) v = uniform(rng);
  std::vector<uint8_t> bits(PackedBitBytes(kCount));
  for (auto _ : state) {
    pack(x.data(), kCount, bits.data());
    benchmark::DoNotOptimize(bits.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kCount));
}

using QuantizeFn = void (*)(const float*, size_t, int, int8_t*);

// Lion Cub's int8 encoder (chorusCompressInt8) for 4 ranks.
void Quantize(benchmark::State& state, QuantizeFn quantize) {
  std::vector<float> x(kCount);
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (float& v : x) v = uniform(rng);
  std::vector<int8_t> q(kCount);
  for (auto _ : state) {
    quantize(x.data(), kCount, 4, q.data());
    benchmark::DoNotOptimize(q.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kCount));
}

// Names end in the number of ranks: decode_bitsliced/4.
void RegisterAll() {
  for (auto [name, decode] : {std::pair<const char*, DecodeFn>{"decode_reference", &reference::SignVoteFromBits},
                              {"decode_bitsliced_portable", &SignVoteFromBitsPortable},
                              {"decode_bitsliced", &SignVoteFromBits}}) {
    benchmark::RegisterBenchmark(name, Decode, decode)->Arg(2)->Arg(4)->Arg(8)->Arg(16)->Arg(64)->Unit(
        benchmark::kMicrosecond);
  }
  benchmark::RegisterBenchmark("pack_reference", Pack, &reference::PackSignBits)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("pack", Pack, &PackSignBits)->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("quantize_int8_reference", Quantize, &reference::QuantizeInt8L1)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("quantize_int8", Quantize, &QuantizeInt8L1)->Unit(benchmark::kMicrosecond);
}

}  // namespace
}  // namespace chorus

int main(int argc, char** argv) {
  chorus::RegisterAll();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
