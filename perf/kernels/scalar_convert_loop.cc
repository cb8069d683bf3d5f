// Compiled apart from the benchmark with the project's default flags, as
// src/lossy/compression.cc is, so that it times what the old loops cost.
#include "scalar_convert_loop.h"

#include "base/half.h"

namespace chorus::perf {

void ScalarNarrowLoop(uint16_t* values, const float* x, size_t count, bool half) {
  for (size_t i = 0; i < count; ++i) values[i] = half ? FloatToHalf(x[i]) : FloatToBfloat16(x[i]);
}

void ScalarWidenLoop(float* out, const uint16_t* values, size_t count, bool half) {
  for (size_t i = 0; i < count; ++i) out[i] = half ? HalfToFloat(values[i]) : Bfloat16ToFloat(values[i]);
}

}  // namespace chorus::perf
