// Helpers shared by the kernel tests: typed views of dtype-erased buffers.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "base/dtype.h"
#include "base/half.h"
#include "kernels/reduce.h"

namespace chorus::testing {

// Writes `value`, a small integer (possibly -0.0) exact in every dtype, as
// element `index`.
inline void StoreSmall(DataType dtype, void* buffer, size_t index, double value) {
  char* at = static_cast<char*>(buffer) + index * DataTypeSize(dtype);
  auto put = [at](auto typed) { std::memcpy(at, &typed, sizeof(typed)); };
  switch (dtype) {
    case chorusInt8: put(static_cast<int8_t>(value)); break;
    case chorusUint8: put(static_cast<uint8_t>(value)); break;
    case chorusInt32: put(static_cast<int32_t>(value)); break;
    case chorusUint32: put(static_cast<uint32_t>(value)); break;
    case chorusInt64: put(static_cast<int64_t>(value)); break;
    case chorusUint64: put(static_cast<uint64_t>(value)); break;
    case chorusFloat16: put(FloatToHalf(static_cast<float>(value))); break;
    case chorusFloat32: put(static_cast<float>(value)); break;
    case chorusFloat64: put(static_cast<double>(value)); break;
    case chorusBfloat16: put(FloatToBfloat16(static_cast<float>(value))); break;
    default: break;
  }
}

inline bool IsSignedType(DataType dtype) {
  return dtype != chorusUint8 && dtype != chorusUint32 && dtype != chorusUint64;
}

// Runs ReduceKernel on typed vectors (dst distinct from inputs).
template <typename T>
std::vector<T> Reduced(const std::vector<T>& a, const std::vector<T>& b, DataType dtype,
                       ReduceOp op) {
  std::vector<T> out(a.size());
  ReduceKernel(out.data(), a.data(), b.data(), a.size(), dtype, op);
  return out;
}

// Bit pattern of a float or double, so that -0.0 differs from +0.0.
template <typename T>
std::vector<uint64_t> BitsOf(const std::vector<T>& values) {
  std::vector<uint64_t> bits;
  for (T v : values) {
    uint64_t b = 0;
    std::memcpy(&b, &v, sizeof(v));
    bits.push_back(b);
  }
  return bits;
}

}  // namespace chorus::testing
