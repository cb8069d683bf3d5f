// The element math of every kernel, CPU and CUDA alike: one element of
// (dtype, op) in, one out. The portable CPU kernels are loops over these
// functions, the SIMD tables give bit-identical results, and the CUDA
// kernels (kernels/cuda/) call them on the device, so tests on the CPU
// (tests/kernels/element_math_test.cc) check the GPU's arithmetic too.
//  - ReduceElement: a op b, computed in the compute type (fp16/bf16 in
//    float32, rounded back to nearest even).
//  - ScaleElement: x * factor (PreMulSum; Avg as a factor), the factor
//    already in the compute type.
//  - DivideElement: x / divisor (Avg): integers truncate toward zero, MIN / -1
//    wraps, a zero divisor leaves integers unchanged; floats divide in the
//    compute type.
#pragma once

#include <type_traits>

#include "base/host_device.h"
#include "kernels/element_ops.h"
#include "kernels/element_types.h"

namespace chorus::kernels {

template <DataType kType>
using StorageOf = typename ElementOf<kType>::Storage;
template <DataType kType>
using ComputeOf = typename ElementOf<kType>::Compute;

template <DataType kType, typename Op>
CHORUS_HOST_DEVICE inline StorageOf<kType> ReduceElement(StorageOf<kType> a, StorageOf<kType> b) {
  using E = ElementOf<kType>;
  return E::Store(Op::Apply(E::Load(a), E::Load(b)));
}

template <DataType kType>
CHORUS_HOST_DEVICE inline StorageOf<kType> ScaleElement(StorageOf<kType> x, ComputeOf<kType> factor) {
  using E = ElementOf<kType>;
  return E::Store(ProdOp::Apply(E::Load(x), factor));
}

template <DataType kType>
CHORUS_HOST_DEVICE inline StorageOf<kType> DivideElement(StorageOf<kType> x, int divisor) {
  using E = ElementOf<kType>;
  using S = StorageOf<kType>;
  using C = ComputeOf<kType>;
  if constexpr (std::is_integral_v<C>) {
    if (divisor == 0) return x;
    if (std::is_signed_v<C> && divisor == -1) return WrappingMul(x, static_cast<S>(-1));
    return static_cast<S>(x / divisor);
  } else {
    return E::Store(E::Load(x) / static_cast<C>(divisor));
  }
}

}  // namespace chorus::kernels
