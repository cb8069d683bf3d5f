#include "type_map.h"

namespace torch_chorus {

std::optional<ReductionType> ReductionTypeOf(at::ScalarType type) {
  switch (type) {
    case at::kFloat: return ReductionType{chorusFloat32, 1};
    case at::kDouble: return ReductionType{chorusFloat64, 1};
    case at::kHalf: return ReductionType{chorusFloat16, 1};
    case at::kBFloat16: return ReductionType{chorusBfloat16, 1};
    case at::kChar: return ReductionType{chorusInt8, 1};
    case at::kByte: return ReductionType{chorusUint8, 1};
    case at::kBool: return ReductionType{chorusUint8, 1};
    case at::kInt: return ReductionType{chorusInt32, 1};
    case at::kLong: return ReductionType{chorusInt64, 1};
    case at::kComplexFloat: return ReductionType{chorusFloat32, 2};
    case at::kComplexDouble: return ReductionType{chorusFloat64, 2};
    case at::kComplexHalf: return ReductionType{chorusFloat16, 2};
    default: return std::nullopt;
  }
}

std::string ReduceOpName(const c10d::ReduceOp& op) {
  switch (op.op_) {
    case c10d::ReduceOp::SUM: return "SUM";
    case c10d::ReduceOp::AVG: return "AVG";
    case c10d::ReduceOp::PRODUCT: return "PRODUCT";
    case c10d::ReduceOp::MIN: return "MIN";
    case c10d::ReduceOp::MAX: return "MAX";
    case c10d::ReduceOp::BAND: return "BAND";
    case c10d::ReduceOp::BOR: return "BOR";
    case c10d::ReduceOp::BXOR: return "BXOR";
    case c10d::ReduceOp::PREMUL_SUM: return "PREMUL_SUM";
    default: return "op " + std::to_string(static_cast<int>(op.op_));
  }
}

OpChoice ChorusOpFor(const c10d::ReduceOp& op, at::ScalarType type) {
  OpChoice choice;
  const bool complex = at::isComplexType(type);
  const bool boolean = type == at::kBool;
  switch (op.op_) {
    case c10d::ReduceOp::SUM: choice.op = boolean ? chorusMax : chorusSum; break;
    case c10d::ReduceOp::PREMUL_SUM: choice.op = chorusSum; break;
    case c10d::ReduceOp::AVG: choice.op = chorusAvg; break;
    case c10d::ReduceOp::PRODUCT: choice.op = boolean ? chorusMin : chorusProd; break;
    case c10d::ReduceOp::MIN: choice.op = chorusMin; break;
    case c10d::ReduceOp::MAX: choice.op = chorusMax; break;
    default:
      choice.error = "Chorus does not support ReduceOp " + ReduceOpName(op) +
                     " (supported: SUM, AVG, PRODUCT, MIN, MAX, PREMUL_SUM)";
      return choice;
  }
  if (complex && choice.op != chorusSum && choice.op != chorusAvg) {
    choice.error = "ReduceOp " + ReduceOpName(op) + " is not defined for complex tensors (" +
                   std::string(c10::toString(type)) + "); SUM, AVG and PREMUL_SUM are";
  } else if (boolean && (op.op_ == c10d::ReduceOp::AVG || op.op_ == c10d::ReduceOp::PREMUL_SUM)) {
    choice.error = "ReduceOp " + ReduceOpName(op) + " is not defined for bool tensors";
  } else if (!ReductionTypeOf(type)) {
    choice.error = "Chorus cannot reduce tensors of dtype " + std::string(c10::toString(type)) +
                   " (float32, float64, float16, bfloat16, int8, uint8, int32, int64, bool and complex can)";
  }
  return choice;
}

}  // namespace torch_chorus
