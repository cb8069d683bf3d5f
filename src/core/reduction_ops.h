// ReductionOps: a communicator's reduction ops beyond the kernels' own:
// Avg and the PreMulSum ops made by chorusRedOpCreatePreMulSum, resolved
// for each call into a kernel op plus the Operation's average / premultiply
// flags. Any thread.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "base/status.h"
#include "chorus/chorus.h"
#include "core/operation.h"

namespace chorus {

// A reduction op made by chorusRedOpCreatePreMulSum.
struct PreMulSumOp {
  DataType dtype = chorusFloat32;
  bool read_each_call = false;   // chorusScalarDevice: read through `pointer`
  const void* pointer = nullptr;
  uint8_t value[8] = {};
  bool live = false;
};

class ReductionOps {
 public:
  Status CreatePreMulSum(const PreMulSumOp& op, chorusRedOp_t* handle);
  Status DestroyPreMulSum(chorusRedOp_t handle);
  // Resolves a public op for `dtype`: the kernel op plus Avg/PreMulSum flags.
  Status Resolve(chorusRedOp_t op, DataType dtype, Operation* operation) const;

 private:
  mutable std::mutex mutex_;
  std::vector<PreMulSumOp> premul_ops_;
};

}  // namespace chorus
