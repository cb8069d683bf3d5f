// Entry points of the bulk fp16/bf16 conversions: the active table's loops.
#include "kernels/convert.h"

#include "kernels/kernel_table.h"

namespace chorus {

void HalfToFloatKernel(float* dst, const uint16_t* src, size_t count) {
  if (count > 0) kernels::ActiveKernels().half_to_float(dst, src, count);
}

void FloatToHalfKernel(uint16_t* dst, const float* src, size_t count) {
  if (count > 0) kernels::ActiveKernels().float_to_half(dst, src, count);
}

void Bfloat16ToFloatKernel(float* dst, const uint16_t* src, size_t count) {
  if (count > 0) kernels::ActiveKernels().bfloat16_to_float(dst, src, count);
}

void FloatToBfloat16Kernel(uint16_t* dst, const float* src, size_t count) {
  if (count > 0) kernels::ActiveKernels().float_to_bfloat16(dst, src, count);
}

}  // namespace chorus
