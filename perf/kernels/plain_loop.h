// The baseline the SIMD kernels are measured against: what a plain C++ loop
// gets from the compiler with the default flags (-O3, no -m options).
#pragma once

#include <cstddef>

namespace chorus::perf {

// a[i] += b[i].
void PlainAddInto(float* a, const float* b, size_t count);

}  // namespace chorus::perf
