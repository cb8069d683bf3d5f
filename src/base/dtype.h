// Facts about the public data types and reduction ops used by every layer.
#pragma once

#include <cstddef>

#include "chorus/chorus.h"

namespace chorus {

using DataType = chorusDataType_t;

// Reduction operators as the kernels see them. Avg and PreMulSum are built by
// the communicator from Sum plus a scaling pass, so kernels never see them.
enum class ReduceOp : int { kSum = 0, kProd = 1, kMax = 2, kMin = 3 };

inline bool IsValidDataType(int dtype) { return dtype >= 0 && dtype < chorusNumTypes; }

inline size_t DataTypeSize(DataType dtype) {
  switch (dtype) {
    case chorusInt8: case chorusUint8: return 1;
    case chorusFloat16: case chorusBfloat16: return 2;
    case chorusInt32: case chorusUint32: case chorusFloat32: return 4;
    case chorusInt64: case chorusUint64: case chorusFloat64: return 8;
    default: return 0;
  }
}

inline bool IsFloatingType(DataType dtype) {
  return dtype == chorusFloat16 || dtype == chorusBfloat16 ||
         dtype == chorusFloat32 || dtype == chorusFloat64;
}

const char* DataTypeName(DataType dtype);
const char* ReduceOpName(ReduceOp op);

}  // namespace chorus
