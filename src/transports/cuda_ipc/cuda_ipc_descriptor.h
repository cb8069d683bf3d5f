// The CUDA IPC transport's registry entry: an overlay (transport_registry.h)
// for peers on this host, in `auto` wherever a GPU is present.
#pragma once

#include <memory>

#include "transports/cuda_ipc/device_ipc.h"
#include "transports/transport_registry.h"

namespace chorus {

// Where the transports of a descriptor get their DeviceIpc: tests pass one
// that serves their fake device; null means CUDA's.
struct DeviceIpcFactory {
  Status (*make)(void* context, const TransportOptions& options, std::unique_ptr<DeviceIpc>* out) = nullptr;
  void* context = nullptr;
};

// The registry's entry (CUDA's DeviceIpc); tests pass a factory of theirs.
TransportDescriptor CudaIpcTransportDescriptor();
TransportDescriptor CudaIpcTransportDescriptor(const DeviceIpcFactory* factory);

}  // namespace chorus
