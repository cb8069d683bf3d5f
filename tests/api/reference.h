// Inputs and their exact expected results. Values are small integers chosen
// so that every partial and final result is representable in every datatype
// (int8 and bfloat16 are the tightest), whatever order an algorithm reduces in.
#pragma once

#include <cstddef>

#include "chorus/chorus.h"

namespace chorus_test {

// What `rank` contributes at element `index` to a reduction with `op`:
//  - sum/max/min: integers in [-15, 15] (signed) or [0, 30] (unsigned);
//  - prod: +-1 except one rank per element holding 0, 2 or -2;
//  - avg: integer types as sum (so the truncation toward zero shows);
//    float types base + 2*rank - (nranks-1), whose sum is nranks*base.
double InputValue(chorusDataType_t dtype, chorusRedOp_t op, int rank, int nranks, size_t index);

// The exact reduction of InputValue over ranks 0..nranks-1 at `index`.
double ReducedValue(chorusDataType_t dtype, chorusRedOp_t op, int nranks, size_t index);

// A value in [0, 100], different for different ranks at the same index: the
// payload of the data-movement collectives.
double PlainValue(int rank, size_t index);

}  // namespace chorus_test
