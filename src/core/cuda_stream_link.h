// The CUDA side of a DeviceStreamLink (core/device_stream_link.h), in builds
// with CUDA: marks are CUDA events recorded on the linked stream, holds are
// stream memory waits (cuStreamWaitValue32, reached through the runtime's
// driver entry points, so libchorus needs no libcuda at link time) on a
// mapped pinned word that the host stream's worker writes.
#pragma once

#include <memory>

#include "core/device_stream_link.h"

namespace chorus {

// Links to `cuda_stream` (a cudaStream_t; NULL: the legacy default stream).
// chorusSystemError naming CUDA's reason where the runtime cannot: no CUDA
// driver, no device, or a device without stream memory operations.
Status MakeCudaStreamLink(void* cuda_stream, int wait_ms, std::unique_ptr<DeviceStreamLink>* out);

}  // namespace chorus
