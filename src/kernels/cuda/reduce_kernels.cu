// CUDA kernels over the shared element math. Each thread handles 16 bytes at
// a time (one 128-bit load per operand) when every pointer is 16-byte
// aligned, then the tail (or everything, when misaligned) element by
// element; grid-stride loops, so any count fits the launch.
#include "kernels/cuda/reduce_kernels.h"

#include <cstdint>
#include <cstring>

#include "kernels/element_math.h"

namespace chorus::cuda {
namespace {

using kernels::ComputeOf;
using kernels::StorageOf;

constexpr int kThreads = 256;
constexpr size_t kVectorBytes = sizeof(uint4);

// Elements of one 16-byte vector, as an array the element math walks.
template <typename S>
union Vector {
  uint4 raw;
  S lanes[kVectorBytes / sizeof(S)];
};

bool Aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % kVectorBytes == 0; }

int BlocksFor(size_t work_items) {
  const size_t blocks = (work_items + kThreads - 1) / kThreads;
  // Enough blocks to fill an H100 several times; grid-stride does the rest.
  return static_cast<int>(blocks < 1 ? 1 : (blocks > 4096 ? 4096 : blocks));
}

template <DataType kType, typename Op>
__global__ void ReduceKernel(StorageOf<kType>* dst, const StorageOf<kType>* a, const StorageOf<kType>* b,
                             size_t count, bool vectorised) {
  using S = StorageOf<kType>;
  constexpr size_t kLanes = kVectorBytes / sizeof(S);
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  size_t done = 0;
  if (vectorised) {
    const size_t vectors = count / kLanes;
    for (size_t v = first; v < vectors; v += stride) {
      Vector<S> x, y, out;
      x.raw = reinterpret_cast<const uint4*>(a)[v];
      y.raw = reinterpret_cast<const uint4*>(b)[v];
#pragma unroll
      for (size_t l = 0; l < kLanes; ++l) out.lanes[l] = kernels::ReduceElement<kType, Op>(x.lanes[l], y.lanes[l]);
      reinterpret_cast<uint4*>(dst)[v] = out.raw;
    }
    done = vectors * kLanes;
  }
  for (size_t i = done + first; i < count; i += stride) dst[i] = kernels::ReduceElement<kType, Op>(a[i], b[i]);
}

template <DataType kType>
__global__ void ScaleKernel(StorageOf<kType>* dst, const StorageOf<kType>* src, size_t count,
                            ComputeOf<kType> factor, bool vectorised) {
  using S = StorageOf<kType>;
  constexpr size_t kLanes = kVectorBytes / sizeof(S);
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  size_t done = 0;
  if (vectorised) {
    const size_t vectors = count / kLanes;
    for (size_t v = first; v < vectors; v += stride) {
      Vector<S> x, out;
      x.raw = reinterpret_cast<const uint4*>(src)[v];
#pragma unroll
      for (size_t l = 0; l < kLanes; ++l) out.lanes[l] = kernels::ScaleElement<kType>(x.lanes[l], factor);
      reinterpret_cast<uint4*>(dst)[v] = out.raw;
    }
    done = vectors * kLanes;
  }
  for (size_t i = done + first; i < count; i += stride) dst[i] = kernels::ScaleElement<kType>(src[i], factor);
}

template <DataType kType>
__global__ void DivideKernel(StorageOf<kType>* buf, size_t count, int divisor) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    buf[i] = kernels::DivideElement<kType>(buf[i], divisor);
  }
}

template <DataType kType, typename Op>
cudaError_t Reduce(void* dst, const void* a, const void* b, size_t count, cudaStream_t stream) {
  using S = StorageOf<kType>;
  const bool vectorised = Aligned(dst) && Aligned(a) && Aligned(b);
  const size_t lanes = kVectorBytes / sizeof(S);
  ReduceKernel<kType, Op><<<BlocksFor(vectorised ? (count + lanes - 1) / lanes : count), kThreads, 0, stream>>>(
      static_cast<S*>(dst), static_cast<const S*>(a), static_cast<const S*>(b), count, vectorised);
  return cudaGetLastError();
}

template <DataType kType>
cudaError_t ReduceType(void* dst, const void* a, const void* b, size_t count, ReduceOp op, cudaStream_t stream) {
  switch (op) {
    case ReduceOp::kSum: return Reduce<kType, kernels::SumOp>(dst, a, b, count, stream);
    case ReduceOp::kProd: return Reduce<kType, kernels::ProdOp>(dst, a, b, count, stream);
    case ReduceOp::kMax: return Reduce<kType, kernels::MaxOp>(dst, a, b, count, stream);
    case ReduceOp::kMin: return Reduce<kType, kernels::MinOp>(dst, a, b, count, stream);
  }
  return cudaErrorInvalidValue;
}

template <DataType kType>
cudaError_t ScaleType(void* dst, const void* src, size_t count, const void* scale, cudaStream_t stream) {
  using S = StorageOf<kType>;
  using E = kernels::ElementOf<kType>;
  S scale_storage;
  std::memcpy(&scale_storage, scale, sizeof(S));  // host memory, maybe unaligned
  const bool vectorised = Aligned(dst) && Aligned(src);
  const size_t lanes = kVectorBytes / sizeof(S);
  ScaleKernel<kType><<<BlocksFor(vectorised ? (count + lanes - 1) / lanes : count), kThreads, 0, stream>>>(
      static_cast<S*>(dst), static_cast<const S*>(src), count, E::Load(scale_storage), vectorised);
  return cudaGetLastError();
}

template <DataType kType>
cudaError_t DivideType(void* buf, size_t count, int divisor, cudaStream_t stream) {
  DivideKernel<kType><<<BlocksFor(count), kThreads, 0, stream>>>(static_cast<StorageOf<kType>*>(buf), count, divisor);
  return cudaGetLastError();
}

// Calls fn.template operator()<kType>() for the runtime dtype.
template <typename Fn>
cudaError_t ForType(DataType dtype, Fn&& fn) {
  switch (dtype) {
    case chorusInt8: return fn.template operator()<chorusInt8>();
    case chorusUint8: return fn.template operator()<chorusUint8>();
    case chorusInt32: return fn.template operator()<chorusInt32>();
    case chorusUint32: return fn.template operator()<chorusUint32>();
    case chorusInt64: return fn.template operator()<chorusInt64>();
    case chorusUint64: return fn.template operator()<chorusUint64>();
    case chorusFloat16: return fn.template operator()<chorusFloat16>();
    case chorusFloat32: return fn.template operator()<chorusFloat32>();
    case chorusFloat64: return fn.template operator()<chorusFloat64>();
    case chorusBfloat16: return fn.template operator()<chorusBfloat16>();
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace

cudaError_t LaunchReduce(void* dst, const void* a, const void* b, size_t count, DataType dtype, ReduceOp op,
                         cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  return ForType(dtype, [&]<DataType kType>() { return ReduceType<kType>(dst, a, b, count, op, stream); });
}

cudaError_t LaunchScale(void* dst, const void* src, size_t count, DataType dtype, const void* scale,
                        cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  return ForType(dtype, [&]<DataType kType>() { return ScaleType<kType>(dst, src, count, scale, stream); });
}

cudaError_t LaunchDivide(void* buf, size_t count, DataType dtype, int divisor, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  return ForType(dtype, [&]<DataType kType>() { return DivideType<kType>(buf, count, divisor, stream); });
}

}  // namespace chorus::cuda
