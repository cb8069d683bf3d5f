// The CUDA kernels and the CUDA device engine against the CPU kernels, bit
// for bit, for every dtype and op; device pointer classification. Built only
// with CUDA; every test skips with "no CUDA driver" (or "no CUDA device")
// where the runtime cannot reach a GPU, as on machines with the toolkit only.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "core/cuda_engine.h"
#include "core/local_engine.h"
#include "core/pointer_kind.h"
#include "kernels/cuda/reduce_kernels.h"
#include "kernels/reduce.h"

namespace chorus {
namespace {

// Empty when a GPU is usable, else why not.
std::string WhyNoGpu() {
  int devices = 0;
  const cudaError_t error = cudaGetDeviceCount(&devices);
  if (error == cudaErrorInsufficientDriver || error == cudaErrorNoDevice) {
    cudaGetLastError();
    return error == cudaErrorInsufficientDriver ? "no CUDA driver" : "no CUDA device";
  }
  if (error != cudaSuccess) {
    cudaGetLastError();
    return std::string("no CUDA driver (") + cudaGetErrorString(error) + ")";
  }
  return devices > 0 ? "" : "no CUDA device";
}

#define SKIP_WITHOUT_GPU()                         \
  do {                                             \
    const std::string why = WhyNoGpu();            \
    if (!why.empty()) GTEST_SKIP() << why;         \
  } while (0)

// Device memory freed at scope exit.
struct DeviceBuffer {
  explicit DeviceBuffer(size_t bytes) { EXPECT_EQ(cudaMalloc(&data, bytes == 0 ? 1 : bytes), cudaSuccess); }
  ~DeviceBuffer() { cudaFree(data); }
  void* data = nullptr;
};

std::vector<uint8_t> RandomBytes(size_t bytes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> out(bytes);
  for (auto& b : out) b = static_cast<uint8_t>(rng());
  return out;
}

// Small values exact in every dtype, so Prod does not overflow to inf and
// the comparison covers ordinary arithmetic; random bits follow in a
// second pass for the special values.
TEST(CudaKernelsTest, ReduceMatchesTheCpuKernelsForEveryDtypeAndOp) {
  SKIP_WITHOUT_GPU();
  // Odd count and an offset of one element: vector bodies, tails, and the
  // misaligned (element by element) path.
  for (size_t offset_elements : {size_t{0}, size_t{1}}) {
    for (int type = 0; type < chorusNumTypes; ++type) {
      const DataType dtype = static_cast<DataType>(type);
      const size_t size = DataTypeSize(dtype), count = 100003;
      const size_t bytes = (count + offset_elements) * size;
      const std::vector<uint8_t> a = RandomBytes(bytes, 1 + type), b = RandomBytes(bytes, 100 + type);
      DeviceBuffer da(bytes), db(bytes), dout(bytes);
      ASSERT_EQ(cudaMemcpy(da.data, a.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(db.data, b.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
      const size_t offset = offset_elements * size;
      for (int op = 0; op < 4; ++op) {
        std::vector<uint8_t> want(bytes, 0), got(bytes, 0);
        ReduceKernel(want.data() + offset, a.data() + offset, b.data() + offset, count, dtype,
                     static_cast<ReduceOp>(op));
        ASSERT_EQ(cudaMemset(dout.data, 0, bytes), cudaSuccess);
        ASSERT_EQ(cuda::LaunchReduce(static_cast<uint8_t*>(dout.data) + offset, static_cast<uint8_t*>(da.data) + offset,
                                     static_cast<uint8_t*>(db.data) + offset, count, dtype, static_cast<ReduceOp>(op),
                                     nullptr),
                  cudaSuccess);
        ASSERT_EQ(cudaMemcpy(got.data(), dout.data, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
        EXPECT_EQ(std::memcmp(got.data(), want.data(), bytes), 0)
            << DataTypeName(dtype) << " " << ReduceOpName(static_cast<ReduceOp>(op)) << " offset " << offset_elements;
      }
    }
  }
}

TEST(CudaKernelsTest, ScaleAndDivideMatchTheCpuKernels) {
  SKIP_WITHOUT_GPU();
  for (int type = 0; type < chorusNumTypes; ++type) {
    const DataType dtype = static_cast<DataType>(type);
    const size_t size = DataTypeSize(dtype), count = 4099, bytes = count * size;
    const std::vector<uint8_t> in = RandomBytes(bytes, 7 + type);
    const std::vector<uint8_t> factor = RandomBytes(size, 9 + type);
    DeviceBuffer din(bytes), dout(bytes);
    ASSERT_EQ(cudaMemcpy(din.data, in.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
    std::vector<uint8_t> want(bytes), got(bytes);
    ScaleKernel(want.data(), in.data(), count, dtype, factor.data());
    ASSERT_EQ(cuda::LaunchScale(dout.data, din.data, count, dtype, factor.data(), nullptr), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(got.data(), dout.data, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(std::memcmp(got.data(), want.data(), bytes), 0) << "scale " << DataTypeName(dtype);

    want = in;
    DivideKernel(want.data(), count, dtype, 3);
    ASSERT_EQ(cuda::LaunchDivide(din.data, count, dtype, 3, nullptr), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(got.data(), din.data, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(std::memcmp(got.data(), want.data(), bytes), 0) << "divide " << DataTypeName(dtype);
  }
}

TEST(CudaEngineTest, CopiesAndReducesWithHostOperands) {
  SKIP_WITHOUT_GPU();
  LocalEngine& engine = CudaDeviceEngine();
  EXPECT_EQ(DefaultLocalEngines().For(MemoryKind::kCudaDevice), &engine);
  const size_t count = 1000;
  std::vector<float> a(count), b(count), out(count);
  for (size_t i = 0; i < count; ++i) {
    a[i] = static_cast<float>(i);
    b[i] = 0.5f * static_cast<float>(i);
  }
  DeviceBuffer da(count * sizeof(float)), dout(count * sizeof(float));
  ASSERT_TRUE(engine.Copy(da.data, a.data(), count * sizeof(float)).ok());
  // b stays in pageable host memory, as the executor's staging does.
  const float factor = 2.0f;
  ASSERT_TRUE(engine.Reduce(dout.data, da.data, b.data(), count, chorusFloat32, ReduceOp::kSum, &factor).ok());
  ASSERT_TRUE(engine.Copy(out.data(), dout.data, count * sizeof(float)).ok());
  for (size_t i = 0; i < count; ++i) ASSERT_EQ(out[i], 3.0f * static_cast<float>(i)) << i;
}

TEST(PointerKindTest, ClassifiesDeviceAndPinnedMemory) {
  SKIP_WITHOUT_GPU();
  DeviceBuffer device(64);
  EXPECT_EQ(ClassifyPointer(device.data), MemoryKind::kCudaDevice);
  void* pinned = nullptr;
  ASSERT_EQ(cudaHostAlloc(&pinned, 64, cudaHostAllocDefault), cudaSuccess);
  EXPECT_EQ(ClassifyPointer(pinned), MemoryKind::kCudaHostPinned);
  cudaFreeHost(pinned);
  std::vector<uint8_t> host(64);
  EXPECT_EQ(ClassifyPointer(host.data()), MemoryKind::kHost);
}

// Runs everywhere: without a driver every pointer is host memory. (The
// runtime's failed initialisation stays visible to cudaPeekAtLastError
// whatever Chorus does: it is sticky.)
TEST(PointerKindTest, HostMemoryIsHostWithOrWithoutADriver) {
  std::vector<uint8_t> host(64);
  EXPECT_EQ(ClassifyPointer(host.data()), MemoryKind::kHost);
  EXPECT_EQ(ClassifyPointer(host.data() + 1), MemoryKind::kHost);
  EXPECT_EQ(ClassifyPointer(nullptr), MemoryKind::kHost);
}

}  // namespace
}  // namespace chorus
