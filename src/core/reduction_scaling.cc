#include "core/reduction_scaling.h"

#include <cstring>

#include "kernels/reduce.h"

namespace chorus {

void ScaledInput(const Operation& op, void* dst, const void* src, size_t count) {
  if (op.premultiply) {
    ScaleKernel(dst, src, count, op.args.dtype, op.scalar);
  } else if (dst != src) {
    std::memcpy(dst, src, count * DataTypeSize(op.args.dtype));
  }
}

void FinishResult(const Operation& op, void* result, size_t count, int nranks) {
  if (op.average) DivideKernel(result, count, op.args.dtype, nranks);
}

}  // namespace chorus
