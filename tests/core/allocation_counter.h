// Heap allocations per thread, for tests that a warm call allocates nothing.
// allocation_counter.cc replaces operator new (every form) in the test
// binary that lists it among its sources; counts are per thread, so that
// each rank thread counts only its own.
#pragma once

namespace chorus::testing {

// Allocations the calling thread made since it started or since its last
// ResetThreadAllocations().
long ThreadAllocations();
void ResetThreadAllocations();

}  // namespace chorus::testing
