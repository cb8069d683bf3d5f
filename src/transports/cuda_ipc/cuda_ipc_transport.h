// The CUDA IPC transport: an overlay (TransportDescriptor::overlay) for peers
// on this host. It carries no host bytes of its own: calls on host memory
// pass to the carrier chosen for the peer (shared memory), and in calls on
// device memory the receiver copies or reduces straight from the sender's
// device buffer, mapped into its process with CUDA IPC, so device data never
// goes through host staging. Protocol: cuda_ipc_endpoint.h.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "transports/cuda_ipc/device_ipc.h"
#include "transports/transport.h"

namespace chorus {

// Creates this rank's transport (its acknowledgement segment), not yet
// connected, over `ipc` (CUDA's, or a test's).
Status CreateCudaIpcTransport(const TransportOptions& options, std::unique_ptr<DeviceIpc> ipc,
                              std::unique_ptr<Transport>* out);

}  // namespace chorus
