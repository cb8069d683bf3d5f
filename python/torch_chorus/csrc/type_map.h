// How torch tensors and reduce ops map onto Chorus's datatypes and ops, in
// one place. Data movement treats any dtype as bytes; reductions need a
// Chorus datatype with the same arithmetic.
#pragma once

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <cstddef>
#include <optional>
#include <string>

#include <chorus/chorus.h>

namespace torch_chorus {

// A tensor's elements as Chorus sees them for a reduction: complex values
// are pairs of their real type.
struct ReductionType {
  chorusDataType_t dtype;
  size_t elements_per_value;  // 2 for complex, else 1
};

// The Chorus datatype that reduces `type` exactly, or nullopt (int16, ...).
std::optional<ReductionType> ReductionTypeOf(at::ScalarType type);

// The Chorus op for `op` on `type`, or an explanation of why there is none.
// PREMUL_SUM maps to chorusSum: the caller scales its input first. Bool
// reduces as uint8 with SUM as MAX (logical or) and PRODUCT as MIN (logical
// and), as NCCL's process group does.
struct OpChoice {
  chorusRedOp_t op = chorusSum;
  std::string error;  // empty when op is valid
};
OpChoice ChorusOpFor(const c10d::ReduceOp& op, at::ScalarType type);

// "SUM", "BAND", ... for messages.
std::string ReduceOpName(const c10d::ReduceOp& op);

}  // namespace torch_chorus
