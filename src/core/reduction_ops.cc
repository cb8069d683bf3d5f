#include "core/reduction_ops.h"

#include <cstring>

namespace chorus {

Status ReductionOps::CreatePreMulSum(const PreMulSumOp& op, chorusRedOp_t* handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  premul_ops_.push_back(op);
  premul_ops_.back().live = true;
  *handle = static_cast<chorusRedOp_t>(chorusNumOps + premul_ops_.size() - 1);
  return Status::Ok();
}

Status ReductionOps::DestroyPreMulSum(chorusRedOp_t handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  long index = static_cast<long>(handle) - chorusNumOps;
  if (index < 0 || index >= static_cast<long>(premul_ops_.size()) || !premul_ops_[index].live) {
    return InvalidArgument("op ", static_cast<int>(handle), " is not a live op made by chorusRedOpCreatePreMulSum");
  }
  premul_ops_[index].live = false;
  return Status::Ok();
}

Status ReductionOps::Resolve(chorusRedOp_t op, DataType dtype, Operation* operation) const {
  int value = static_cast<int>(op);
  operation->average = false;
  operation->premultiply = false;
  if (value >= 0 && value < chorusNumOps) {
    operation->args.op = value == chorusAvg ? ReduceOp::kSum : static_cast<ReduceOp>(value);
    operation->average = value == chorusAvg;
    return Status::Ok();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  long index = static_cast<long>(value) - chorusNumOps;
  if (index < 0 || index >= static_cast<long>(premul_ops_.size()) || !premul_ops_[index].live) {
    return InvalidArgument("unknown reduction op ", value);
  }
  const PreMulSumOp& premul = premul_ops_[index];
  if (premul.dtype != dtype) {
    return InvalidArgument("PreMulSum op ", value, " was created for ", DataTypeName(premul.dtype), ", not ",
                           DataTypeName(dtype));
  }
  operation->args.op = ReduceOp::kSum;
  operation->premultiply = true;
  std::memcpy(operation->scalar, premul.read_each_call ? premul.pointer : premul.value, DataTypeSize(dtype));
  return Status::Ok();
}

}  // namespace chorus
