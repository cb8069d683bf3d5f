// A deliberately simple element-wise reduction for the algorithm tests, so
// they do not depend on the optimised kernels (tested on their own).
// Integer Sum/Prod wrap like two's complement; fp16/bf16 are not supported.
#pragma once

#include <cstddef>

#include "base/dtype.h"

namespace chorus::testing {

// dst[i] = a[i] (op) b[i]; dst may alias a or b exactly. Returns false for an
// unsupported dtype.
bool ReferenceReduce(void* dst, const void* a, const void* b, size_t count, DataType dtype, ReduceOp op);

}  // namespace chorus::testing
