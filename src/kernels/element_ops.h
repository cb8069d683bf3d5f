// The four reduction operators on one element of a compute type (shared by
// the CPU and CUDA kernels: kernels/element_math.h).
//
// Integers: Sum and Prod wrap modulo 2^bits (done in unsigned arithmetic, so
// there is no signed-overflow UB); 8-bit values are widened to uint32_t first
// because uint8_t * uint8_t would promote to (signed) int.
//
// Floats: Sum and Prod pin the NaN they return when both operands are NaN
// (see FirstNanWins), so that every kernel table gives the same bits.
// Max is `a > b ? a : b` and Min is `a < b ? a : b`, the semantics of
// x86 maxps/minps, so the loops vectorise to one instruction. NaN therefore
// propagates only from the second operand: Max(NaN, 1) == 1 but
// Max(1, NaN) == NaN. -0.0 and +0.0 compare equal, so the second is returned.
#pragma once

#include <cstdint>
#include <type_traits>

#include "base/host_device.h"

namespace chorus::kernels {

template <typename T>
using WrapType =
    std::conditional_t<(sizeof(T) < sizeof(uint32_t)), uint32_t, std::make_unsigned_t<T>>;

template <typename T>
CHORUS_HOST_DEVICE inline T WrappingAdd(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<WrapType<T>>(a) + static_cast<WrapType<T>>(b));
  } else {
    return a + b;
  }
}

template <typename T>
CHORUS_HOST_DEVICE inline T WrappingMul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<WrapType<T>>(a) * static_cast<WrapType<T>>(b));
  } else {
    return a * b;
  }
}

// x86 returns the first operand's NaN (quieted) when both operands of + or *
// are NaN, but compilers treat + and * as commutative and may swap them, so
// which payload survives would depend on code generation. Returning a's NaN
// whenever a is NaN pins it; the SIMD kernels do the same with one blend.
template <typename T>
CHORUS_HOST_DEVICE inline T FirstNanWins(T a, T result) {
  if constexpr (std::is_floating_point_v<T>) {
    using Bits = std::conditional_t<sizeof(T) == sizeof(uint32_t), uint32_t, uint64_t>;
    constexpr int kMantissaBits = sizeof(T) == sizeof(uint32_t) ? 23 : 52;
    const Bits bits = BitCast<Bits>(a) | Bits{1} << (kMantissaBits - 1);  // the quiet bit
    const T quiet_a = BitCast<T>(bits);
    return a != a ? quiet_a : result;
  } else {
    return result;
  }
}

struct SumOp {
  template <typename T>
  CHORUS_HOST_DEVICE static T Apply(T a, T b) { return FirstNanWins(a, WrappingAdd(a, b)); }
};

struct ProdOp {
  template <typename T>
  CHORUS_HOST_DEVICE static T Apply(T a, T b) { return FirstNanWins(a, WrappingMul(a, b)); }
};

struct MaxOp {
  template <typename T>
  CHORUS_HOST_DEVICE static T Apply(T a, T b) { return a > b ? a : b; }
};

struct MinOp {
  template <typename T>
  CHORUS_HOST_DEVICE static T Apply(T a, T b) { return a < b ? a : b; }
};

}  // namespace chorus::kernels
