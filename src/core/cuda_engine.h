// The local engine of CUDA device memory (core/local_engine.h), in builds
// with CUDA. Stateless, so one instance serves every communicator and thread:
// each call works on a non-blocking stream of the calling thread and waits
// for it before returning, so the executor
// sees it complete. A host operand of a reduce that the device cannot read
// (pageable memory, e.g. the executor's staging) is first copied to a
// temporary device buffer from the stream-ordered allocator.
#pragma once

#include "core/local_engine.h"

namespace chorus {

LocalEngine& CudaDeviceEngine();

}  // namespace chorus
