// The baseline of the bulk conversions (kernels/convert.h): the per-element
// loops chorusAllReduceCompressed's fp16/bf16 wire ran before them
// (src/lossy/compression.cc, SixteenBitSum), base/half.h's scalar functions
// with the format chosen per element.
#pragma once

#include <cstddef>
#include <cstdint>

namespace chorus::perf {

void ScalarNarrowLoop(uint16_t* values, const float* x, size_t count, bool half);
void ScalarWidenLoop(float* out, const uint16_t* values, size_t count, bool half);

}  // namespace chorus::perf
