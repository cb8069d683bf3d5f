// The GPU reduction kernels (kernels/cuda/) against the device's own copy
// bandwidth, measured in the same run: for each datatype and op, the time of
// LaunchReduce(dst = a op b) over `bytes` per operand, as memory traffic
// (two reads and one write: 3 x bytes / time), beside cudaMemcpy device to
// device of the same size (one read and one write: 2 x bytes / time). The
// target is a ratio of at least 0.85. Timing is by CUDA events over `-n`
// launches after one warm-up launch; the copy is re-measured before each
// datatype so that clock changes show as they happen.
//
//   build/perf/kernels/cuda_reduce_benchmark [-b 256M] [-n 20]
//
// Exit 0 after the table, 2 when the device cannot be used (the reason is
// printed: "no CUDA driver or device" on machines without a GPU).
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/config.h"
#include "base/dtype.h"
#include "kernels/cuda/reduce_kernels.h"

namespace {

using chorus::DataType;
using chorus::ReduceOp;

bool Ok(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return true;
  const bool no_device = error == cudaErrorInsufficientDriver || error == cudaErrorNoDevice;
  std::fprintf(stderr, "cuda_reduce_benchmark: %s: %s%s\n", what, no_device ? "no CUDA driver or device: " : "",
               cudaGetErrorString(error));
  return false;
}

// Seconds per call of `launch` over `iters` calls, after one warm-up call.
template <typename Launch>
bool TimeLaunches(int iters, cudaEvent_t start, cudaEvent_t stop, double* seconds, Launch launch) {
  if (!Ok(launch(), "warm-up launch") || !Ok(cudaDeviceSynchronize(), "warm-up")) return false;
  if (!Ok(cudaEventRecord(start, nullptr), "cudaEventRecord")) return false;
  for (int i = 0; i < iters; ++i) {
    if (!Ok(launch(), "launch")) return false;
  }
  if (!Ok(cudaEventRecord(stop, nullptr), "cudaEventRecord") || !Ok(cudaEventSynchronize(stop), "timed launches")) {
    return false;
  }
  float ms = 0;
  if (!Ok(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime")) return false;
  *seconds = ms / 1e3 / iters;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  size_t bytes = size_t{256} << 20;
  int iters = 20;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if ((flag == "-b" || flag == "-n") && i + 1 < argc) {
      const std::string value = argv[++i];
      if (flag == "-b") {
        if (!chorus::ParseBytes(value, "-b", &bytes).ok() || bytes < 1024) {
          std::fprintf(stderr, "cuda_reduce_benchmark: -b takes a size of at least 1K, not '%s'\n", value.c_str());
          return 2;
        }
      } else {
        iters = std::atoi(value.c_str());
        if (iters < 1) {
          std::fprintf(stderr, "cuda_reduce_benchmark: -n takes a positive count, not '%s'\n", value.c_str());
          return 2;
        }
      }
    } else {
      std::fprintf(stderr, "usage: cuda_reduce_benchmark [-b bytes per operand, default 256M] [-n launches, default 20]\n");
      return 2;
    }
  }
  int device = 0;
  cudaDeviceProp properties{};
  if (!Ok(cudaGetDevice(&device), "cudaGetDevice") ||
      !Ok(cudaGetDeviceProperties(&properties, device), "cudaGetDeviceProperties")) {
    return 2;
  }
  void *a = nullptr, *b = nullptr, *dst = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  if (!Ok(cudaMalloc(&a, bytes), "cudaMalloc") || !Ok(cudaMalloc(&b, bytes), "cudaMalloc") ||
      !Ok(cudaMalloc(&dst, bytes), "cudaMalloc") || !Ok(cudaMemset(a, 0x11, bytes), "cudaMemset") ||
      !Ok(cudaMemset(b, 0x22, bytes), "cudaMemset") || !Ok(cudaEventCreate(&start), "cudaEventCreate") ||
      !Ok(cudaEventCreate(&stop), "cudaEventCreate")) {
    return 2;
  }
  std::printf("# %s, %zu bytes per operand, %d launches each\n", properties.name, bytes, iters);
  std::printf("# %-9s %-5s %12s %12s %7s\n", "dtype", "op", "reduce GB/s", "copy GB/s", "ratio");
  double worst = 1e9;
  for (int t = 0; t < chorusNumTypes; ++t) {
    const auto dtype = static_cast<DataType>(t);
    const size_t count = bytes / chorus::DataTypeSize(dtype);
    double copy_seconds = 0;
    if (!TimeLaunches(iters, start, stop, &copy_seconds,
                      [&] { return cudaMemcpyAsync(dst, a, bytes, cudaMemcpyDeviceToDevice, nullptr); })) {
      return 2;
    }
    const double copy_gbs = 2.0 * static_cast<double>(bytes) / copy_seconds / 1e9;
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMax, ReduceOp::kMin}) {
      double seconds = 0;
      if (!TimeLaunches(iters, start, stop, &seconds,
                        [&] { return chorus::cuda::LaunchReduce(dst, a, b, count, dtype, op, nullptr); })) {
        return 2;
      }
      const double reduce_gbs = 3.0 * static_cast<double>(bytes) / seconds / 1e9;
      const double ratio = reduce_gbs / copy_gbs;
      if (ratio < worst) worst = ratio;
      std::printf("  %-9s %-5s %12.1f %12.1f %7.2f\n", chorus::DataTypeName(dtype), chorus::ReduceOpName(op),
                  reduce_gbs, copy_gbs, ratio);
    }
  }
  std::printf("# lowest ratio %.2f (target 0.85)\n", worst);
  cudaFree(a);
  cudaFree(b);
  cudaFree(dst);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return 0;
}
