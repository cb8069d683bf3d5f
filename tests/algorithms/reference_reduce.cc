#include "reference_reduce.h"

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace chorus::testing {

namespace {

// Integer arithmetic goes through the unsigned type so overflow wraps
// instead of being undefined.
template <typename T, bool kIntegral = std::is_integral_v<T>>
struct ArithmeticType {
  using type = T;
};
template <typename T>
struct ArithmeticType<T, true> {
  using type = std::make_unsigned_t<T>;
};

template <typename T>
T Combine(T x, T y, ReduceOp op) {
  using Arith = typename ArithmeticType<T>::type;
  switch (op) {
    case ReduceOp::kSum:
      return static_cast<T>(static_cast<Arith>(x) + static_cast<Arith>(y));
    case ReduceOp::kProd:
      if constexpr (std::is_integral_v<T> && sizeof(T) < sizeof(unsigned)) {
        return static_cast<T>(static_cast<unsigned>(static_cast<Arith>(x)) *
                              static_cast<unsigned>(static_cast<Arith>(y)));
      } else {
        return static_cast<T>(static_cast<Arith>(x) * static_cast<Arith>(y));
      }
    case ReduceOp::kMax:
      return x > y ? x : y;
    case ReduceOp::kMin:
      return x < y ? x : y;
  }
  return x;
}

template <typename T>
void ReduceTyped(void* dst, const void* a, const void* b, size_t count, ReduceOp op) {
  for (size_t i = 0; i < count; ++i) {
    T x;
    T y;
    std::memcpy(&x, static_cast<const char*>(a) + i * sizeof(T), sizeof(T));
    std::memcpy(&y, static_cast<const char*>(b) + i * sizeof(T), sizeof(T));
    const T z = Combine(x, y, op);
    std::memcpy(static_cast<char*>(dst) + i * sizeof(T), &z, sizeof(T));
  }
}

}  // namespace

bool ReferenceReduce(void* dst, const void* a, const void* b, size_t count, DataType dtype, ReduceOp op) {
  switch (dtype) {
    case chorusInt8:
      ReduceTyped<int8_t>(dst, a, b, count, op);
      return true;
    case chorusUint8:
      ReduceTyped<uint8_t>(dst, a, b, count, op);
      return true;
    case chorusInt32:
      ReduceTyped<int32_t>(dst, a, b, count, op);
      return true;
    case chorusUint32:
      ReduceTyped<uint32_t>(dst, a, b, count, op);
      return true;
    case chorusInt64:
      ReduceTyped<int64_t>(dst, a, b, count, op);
      return true;
    case chorusUint64:
      ReduceTyped<uint64_t>(dst, a, b, count, op);
      return true;
    case chorusFloat32:
      ReduceTyped<float>(dst, a, b, count, op);
      return true;
    case chorusFloat64:
      ReduceTyped<double>(dst, a, b, count, op);
      return true;
    default:
      return false;
  }
}

}  // namespace chorus::testing
