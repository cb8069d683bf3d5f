// The four reduction operators on one element of a compute type.
//
// Integers: Sum and Prod wrap modulo 2^bits (done in unsigned arithmetic, so
// there is no signed-overflow UB); 8-bit values are widened to uint32_t first
// because uint8_t * uint8_t would promote to (signed) int.
//
// Floats: Max is `a > b ? a : b` and Min is `a < b ? a : b`, the semantics of
// x86 maxps/minps, so the loops vectorise to one instruction. NaN therefore
// propagates only from the second operand: Max(NaN, 1) == 1 but
// Max(1, NaN) == NaN. -0.0 and +0.0 compare equal, so the second is returned.
#pragma once

#include <cstdint>
#include <type_traits>

namespace chorus::kernels {

template <typename T>
using WrapType =
    std::conditional_t<(sizeof(T) < sizeof(uint32_t)), uint32_t, std::make_unsigned_t<T>>;

template <typename T>
inline T WrappingAdd(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<WrapType<T>>(a) + static_cast<WrapType<T>>(b));
  } else {
    return a + b;
  }
}

template <typename T>
inline T WrappingMul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<WrapType<T>>(a) * static_cast<WrapType<T>>(b));
  } else {
    return a * b;
  }
}

struct SumOp {
  template <typename T>
  static T Apply(T a, T b) { return WrappingAdd(a, b); }
};

struct ProdOp {
  template <typename T>
  static T Apply(T a, T b) { return WrappingMul(a, b); }
};

struct MaxOp {
  template <typename T>
  static T Apply(T a, T b) { return a > b ? a : b; }
};

struct MinOp {
  template <typename T>
  static T Apply(T a, T b) { return a < b ? a : b; }
};

}  // namespace chorus::kernels
