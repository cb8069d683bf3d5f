// Bulk conversions between float32 and the 16-bit float formats (fp16 and
// bf16), e.g. for a 16-bit wire: the kernel table's loops (AVX-512, AVX2 +
// F16C, or portable, chosen at run time like ReduceKernel's).
//
// Bit-identical to base/half.h's HalfToFloat, FloatToHalf, Bfloat16ToFloat and
// FloatToBfloat16 applied to each element, for every input: round to nearest
// even, overflow to inf, subnormals both ways, -0, and NaN payloads (a
// signaling fp16 NaN widens to a signaling float NaN, as the scalar does).
// dst and src must not overlap.
#pragma once

#include <cstddef>
#include <cstdint>

namespace chorus {

void HalfToFloatKernel(float* dst, const uint16_t* src, size_t count);
void FloatToHalfKernel(uint16_t* dst, const float* src, size_t count);
void Bfloat16ToFloatKernel(float* dst, const uint16_t* src, size_t count);
void FloatToBfloat16Kernel(uint16_t* dst, const float* src, size_t count);

}  // namespace chorus
