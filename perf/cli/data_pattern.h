// Verifiable data: every element is a small integer (or, for avg, an exact
// quotient) chosen so that every type and op gives one bit-exact answer in
// any reduction order. Values repeat with a prime period, so the expected
// reduction is computed once per period, not once per element.
#pragma once

#include <cstddef>

#include "chorus/chorus.h"
#include "perf/cli/names.h"

namespace chorus::perf {

struct ReductionPattern {
  chorusDataType_t type;
  PerfOp op;
  int nranks;
  int seed;  // changes the data between runs so that stale results fail
};

// Elements [first, first+count) of `rank`'s contribution.
void FillReductionInput(const ReductionPattern& pattern, int rank, void* buf, size_t first, size_t count);
// Elements of `buf` that differ from the reduction over all ranks of
// elements [first, first+count).
size_t CountWrongReduced(const ReductionPattern& pattern, const void* buf, size_t first, size_t count);

// Data-movement collectives: elements [first, first+count) of the data
// that originates on rank `source`.
void FillSourceData(chorusDataType_t type, int seed, int source, void* buf, size_t first, size_t count);
size_t CountWrongSourceData(chorusDataType_t type, int seed, int source, const void* buf, size_t first,
                            size_t count);

// The PreMulSum scalar of `rank` for "mulsum", encoded as `type` into out
// (8 bytes of room).
void MulSumScalar(chorusDataType_t type, int rank, void* out);

}  // namespace chorus::perf
