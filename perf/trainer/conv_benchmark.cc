// The trainer's convolutions (examples/trainer/conv2d.cc), forward and
// backward, with the batch split into chunks of images of a given size of
// patches against the whole batch through one GEMM (chunk_kib:0). Shapes:
// LeNet's two convolutions at 48 images, the per-rank batch of the emulated
// cluster's Pipe-SGD runs (global batch 192 on 4 ranks). ->Threads(4) runs 4
// independent layers at once, as 4 ranks on one machine do. Items/s counts
// images. OpenBLAS runs single-threaded, as in the trainer's ranks
// (--blas-threads 1).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "examples/trainer/conv2d.h"
#include "examples/trainer/gemm.h"
#include "examples/trainer/random.h"
#include "examples/trainer/tensor.h"

namespace trainer {
namespace {

constexpr int kImages = 48;

struct ConvShape {
  int in_channels, out_channels, size;  // square input
  bool input_grad;                      // the first layer computes none
};
constexpr ConvShape kLeNetConv1{1, 20, 28, false};
constexpr ConvShape kLeNetConv2{20, 50, 12, true};

Tensor Random(Shape shape, uint64_t seed) {
  Tensor t(shape);
  Rng rng(seed);
  for (size_t i = 0; i < t.size(); ++i) t[i] = static_cast<float>(rng.Uniform() - 0.5);
  return t;
}

// range(0): KiB of patches per chunk, 0 for the whole batch in one GEMM.
void ConvStep(benchmark::State& state, ConvShape shape) {
  Conv2d conv(shape.in_channels, shape.out_channels, 5);
  std::vector<float> weights(conv.ParameterCount()), gradients(conv.ParameterCount());
  conv.BindParameters(weights.data(), gradients.data());
  Rng rng(1);
  conv.InitializeParameters(rng);
  const size_t kib = static_cast<size_t>(state.range(0));
  conv.set_chunk_bytes(kib == 0 ? SIZE_MAX : kib * 1024);
  const Tensor input = Random(Shape{kImages, shape.in_channels, shape.size, shape.size}, 2);
  Tensor output, input_grad;
  conv.Forward(input, &output);
  const Tensor output_grad = Random(output.shape(), 3);
  for (auto _ : state) {
    conv.Forward(input, &output);
    conv.Backward(input, output, output_grad, shape.input_grad ? &input_grad : nullptr);
    benchmark::DoNotOptimize(gradients.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kImages);
}

void ChunkSizes(benchmark::internal::Benchmark* b) {
  b->ArgName("chunk_kib");
  for (int kib : {0, 128, 256, 512, 1024, 2048}) b->Arg(kib);
  b->UseRealTime();
}

BENCHMARK_CAPTURE(ConvStep, lenet_conv1, kLeNetConv1)->Apply(ChunkSizes);
BENCHMARK_CAPTURE(ConvStep, lenet_conv2, kLeNetConv2)->Apply(ChunkSizes);
BENCHMARK_CAPTURE(ConvStep, lenet_conv2, kLeNetConv2)->Apply(ChunkSizes)->Threads(4);

}  // namespace
}  // namespace trainer

int main(int argc, char** argv) {
  trainer::SetBlasThreads(1);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
