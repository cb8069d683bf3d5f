// The shared-memory transport's registry entry and its own variables.
#include "base/config.h"
#include "transports/shm/shm_transport.h"
#include "transports/transport_registry.h"

namespace chorus {
namespace {

const char* const kShmVariables[] = {"CHORUS_SHM_RING_BYTES", nullptr};

Status CheckShmVars(const TransportVars& vars) {
  size_t ring_bytes = 0;
  return ParseShmRingBytes(vars.Get("CHORUS_SHM_RING_BYTES"), &ring_bytes);
}

Status CreateShm(const TransportDescriptor&, const TransportOptions& options, const TransportVars& vars, std::unique_ptr<Transport>* out) {
  ShmTuning tuning;
  CHORUS_RETURN_IF_ERROR(ParseShmRingBytes(vars.Get("CHORUS_SHM_RING_BYTES"), &tuning.ring_bytes));
  return CreateShmTransport(options, out, tuning);
}

}  // namespace

TransportDescriptor ShmTransportDescriptor() {
  TransportDescriptor descriptor = {};
  descriptor.name = "shm";
  descriptor.preference = 10;
  descriptor.capabilities.same_host_only = true;  // host identity: hostname, boot id, network namespace
  descriptor.capabilities.combine_on_receive = true;
  descriptor.variables = kShmVariables;
  descriptor.check = CheckShmVars;
  descriptor.create = CreateShm;
  return descriptor;
}

}  // namespace chorus
