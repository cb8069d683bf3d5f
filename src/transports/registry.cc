// The built-in transports: adding one is its own folder plus one line here
// (docs/architecture.md, "How to add a transport"). This is the only file
// outside a transport's folder that includes its header.
#include "chorus_build_config.h"
#include "transports/cuda_ipc/cuda_ipc_descriptor.h"
#include "transports/shm/shm_transport.h"
#include "transports/tcp/tcp_transport.h"
#include "transports/transport_registry.h"
#if CHORUS_HAVE_UCX
#include "transports/ucx/ucx_descriptor.h"
#endif
#if CHORUS_HAVE_IBVERBS
#include "transports/ibverbs/ib_descriptor.h"
#endif

namespace chorus {

const TransportRegistry& BuiltinTransports() {
  // Built once and never changed: a constant table, not mutable state.
  static const TransportRegistry kBuiltin({
      ShmTransportDescriptor(),
      TcpTransportDescriptor(),
      CudaIpcTransportDescriptor(),
#if CHORUS_HAVE_UCX
      UcxTransportDescriptor(),
#endif
#if CHORUS_HAVE_IBVERBS
      IbTransportDescriptor(),
#endif
  });
  return kBuiltin;
}

}  // namespace chorus
