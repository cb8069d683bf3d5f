#include "base/dtype.h"

namespace chorus {

const char* DataTypeName(DataType dtype) {
  switch (dtype) {
    case chorusInt8: return "int8";
    case chorusUint8: return "uint8";
    case chorusInt32: return "int32";
    case chorusUint32: return "uint32";
    case chorusInt64: return "int64";
    case chorusUint64: return "uint64";
    case chorusFloat16: return "half";
    case chorusFloat32: return "float";
    case chorusFloat64: return "double";
    case chorusBfloat16: return "bfloat16";
    default: return "unknown";
  }
}

const char* ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kProd: return "prod";
    case ReduceOp::kMax: return "max";
    case ReduceOp::kMin: return "min";
  }
  return "unknown";
}

}  // namespace chorus
