// Compiled apart from the benchmark, with the project's default flags only,
// so that it stands for "a plain loop" and nothing more.
#include "plain_loop.h"

namespace chorus::perf {

void PlainAddInto(float* a, const float* b, size_t count) {
  for (size_t i = 0; i < count; ++i) a[i] += b[i];
}

}  // namespace chorus::perf
