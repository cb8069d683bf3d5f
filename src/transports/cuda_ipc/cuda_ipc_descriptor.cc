#include "transports/cuda_ipc/cuda_ipc_descriptor.h"

#include "base/cuda_device.h"
#include "chorus_build_config.h"
#include "transports/cuda_ipc/cuda_ipc_transport.h"
#if CHORUS_HAVE_CUDA
#include "transports/cuda_ipc/cuda_device_ipc.h"
#endif

namespace chorus {
namespace {

const char* const kCudaIpcVariables[] = {nullptr};

bool CudaIpcAvailable(const TransportDescriptor& descriptor) {
  return descriptor.context != nullptr || CudaDevicePresent();
}

Status CreateCudaIpc(const TransportDescriptor& descriptor, const TransportOptions& options, const TransportVars&,
                     std::unique_ptr<Transport>* out) {
  std::unique_ptr<DeviceIpc> ipc;
  if (descriptor.context != nullptr) {
    const auto* factory = static_cast<const DeviceIpcFactory*>(descriptor.context);
    CHORUS_RETURN_IF_ERROR(factory->make(factory->context, options, &ipc));
  } else {
#if CHORUS_HAVE_CUDA
    CHORUS_RETURN_IF_ERROR(CreateCudaDeviceIpc(&ipc));
#else
    return InvalidUsage("cuda_ipc: this build has no CUDA (configure with -Dcuda=auto)");
#endif
  }
  return CreateCudaIpcTransport(options, std::move(ipc), out);
}

}  // namespace

TransportDescriptor CudaIpcTransportDescriptor(const DeviceIpcFactory* factory) {
  TransportDescriptor descriptor = {};
  descriptor.name = "cuda_ipc";
  descriptor.preference = 5;  // overlays the carrier of each same-host peer
  descriptor.capabilities.same_host_only = true;
  descriptor.capabilities.combine_on_receive = true;
  descriptor.capabilities.memory_kinds = kCpuAccessibleKinds | KindBit(MemoryKind::kCudaDevice);
  descriptor.overlay = true;
  descriptor.available = CudaIpcAvailable;
  descriptor.variables = kCudaIpcVariables;
  descriptor.create = CreateCudaIpc;
  descriptor.context = const_cast<DeviceIpcFactory*>(factory);
  return descriptor;
}

TransportDescriptor CudaIpcTransportDescriptor() { return CudaIpcTransportDescriptor(nullptr); }

}  // namespace chorus
