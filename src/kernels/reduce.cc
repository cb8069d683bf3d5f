// Entry points of the reduction kernels: look up the (dtype, op) kernel in
// the active table. Arguments were validated by the caller (the C API layer
// rejects unknown dtypes and ops); an out-of-range value here is ignored
// rather than indexing outside the table.
#include "kernels/reduce.h"

#include "kernels/kernel_table.h"

namespace chorus {
namespace {

bool InRange(DataType dtype) { return IsValidDataType(static_cast<int>(dtype)); }

}  // namespace

void ReduceKernel(void* dst, const void* a, const void* b, size_t count,
                  DataType dtype, ReduceOp op) {
  const int op_index = static_cast<int>(op);
  if (count == 0 || !InRange(dtype) || op_index < 0 || op_index >= kernels::kNumReduceOps) {
    return;
  }
  kernels::ActiveKernels().reduce[dtype][op_index](dst, a, b, count);
}

void ScaleKernel(void* dst, const void* src, size_t count, DataType dtype,
                 const void* scalar) {
  if (count == 0 || !InRange(dtype)) return;
  kernels::ActiveKernels().scale[dtype](dst, src, count, scalar);
}

void DivideKernel(void* buf, size_t count, DataType dtype, int divisor) {
  if (count == 0 || !InRange(dtype)) return;
  kernels::ActiveKernels().divide[dtype](buf, count, divisor);
}

}  // namespace chorus
