// The UCX transport's registry entry and its own variables.
#include "transports/ucx/ucx_descriptor.h"

#include <cctype>

#include "base/config.h"
#include "transports/ucx/ucx_transport.h"

namespace chorus {
namespace {

const char* const kUcxVariables[] = {"CHORUS_UCX_TLS", "CHORUS_UCX_KEEPALIVE_MS", nullptr};

Status CheckUcxVars(const TransportVars& vars) {
  UcxOptions options;
  return ReadUcxOptions(vars, &options);
}

Status CreateUcx(const TransportDescriptor&, const TransportOptions& common, const TransportVars& vars,
                 std::unique_ptr<Transport>* out) {
  UcxOptions options;
  CHORUS_RETURN_IF_ERROR(ReadUcxOptions(vars, &options));
  static_cast<TransportOptions&>(options) = common;
  return CreateUcxTransport(options, out);
}

}  // namespace

Status ReadUcxOptions(const TransportVars& vars, UcxOptions* options) {
  options->tls = vars.Get("CHORUS_UCX_TLS");
  for (char c : options->tls) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == ',' || c == '_' || c == '^')) {
      return InvalidArgument("CHORUS_UCX_TLS must be a UCX_TLS list such as 'tcp' or 'posix,cma,tcp', not '",
                             options->tls, "'");
    }
  }
  long long keepalive_ms = 0;
  CHORUS_RETURN_IF_ERROR(ParseInt(vars.Get("CHORUS_UCX_KEEPALIVE_MS"), "CHORUS_UCX_KEEPALIVE_MS", &keepalive_ms));
  if (keepalive_ms < 1 || keepalive_ms > 3600000) return InvalidArgument("CHORUS_UCX_KEEPALIVE_MS must be in 1..3600000");
  options->keepalive_ms = static_cast<int>(keepalive_ms);
  return Status::Ok();
}

TransportDescriptor UcxTransportDescriptor() {
  TransportDescriptor descriptor = {};
  descriptor.name = "ucx";
  descriptor.preference = 200;  // after TCP, where a list puts it last
  // Not in auto: shm and TCP reach every peer it does, and creating it costs
  // every communicator a UCP context, a worker and a 4 MiB /dev/shm FIFO. Name
  // it to use it (CHORUS_TRANSPORT=ucx, shm,ucx).
  descriptor.explicit_only = true;
  descriptor.capabilities = TransportCapabilities();
  descriptor.variables = kUcxVariables;
  descriptor.check = CheckUcxVars;
  descriptor.create = CreateUcx;
  return descriptor;
}

}  // namespace chorus
