// The TCP transport's registry entry and its own variables.
#include "base/config.h"
#include "transports/tcp/tcp_interface_choice.h"
#include "transports/tcp/tcp_transport.h"
#include "transports/transport_registry.h"

namespace chorus {
namespace {

const char* const kTcpVariables[] = {"CHORUS_NSOCKS", "CHORUS_SOCKET_RCVBUF", "CHORUS_SOCKET_SNDBUF", nullptr};

Status CheckTcpVars(const TransportVars& vars) {
  TcpOptions options;
  return ReadTcpOptions(vars, &options);
}

Status CreateTcp(const TransportDescriptor&, const TransportOptions& common, const TransportVars& vars, std::unique_ptr<Transport>* out) {
  TcpOptions options;
  CHORUS_RETURN_IF_ERROR(ReadTcpOptions(vars, &options));
  static_cast<TransportOptions&>(options) = common;
  return CreateTcpTransport(options, out);
}

bool TcpUsesIoDevices(const TransportOptions& options) { return TcpMayChooseInterface(options.ifname); }

}  // namespace

Status ReadTcpOptions(const TransportVars& vars, TcpOptions* options) {
  long long nsocks = 0;
  CHORUS_RETURN_IF_ERROR(ParseInt(vars.Get("CHORUS_NSOCKS"), "CHORUS_NSOCKS", &nsocks));
  if (nsocks < 1 || nsocks > 64) return InvalidArgument("CHORUS_NSOCKS must be in 1..64");
  options->nsocks = static_cast<int>(nsocks);
  CHORUS_RETURN_IF_ERROR(
      ParseSocketBufferBytes(vars.Get("CHORUS_SOCKET_RCVBUF"), "CHORUS_SOCKET_RCVBUF", &options->socket_rcvbuf));
  CHORUS_RETURN_IF_ERROR(
      ParseSocketBufferBytes(vars.Get("CHORUS_SOCKET_SNDBUF"), "CHORUS_SOCKET_SNDBUF", &options->socket_sndbuf));
  return Status::Ok();
}

TransportDescriptor TcpTransportDescriptor() {
  TransportDescriptor descriptor = {};
  descriptor.name = "tcp";
  descriptor.preference = 100;  // reaches every host, slower than any local path
  descriptor.capabilities = TransportCapabilities();
  descriptor.variables = kTcpVariables;
  descriptor.check = CheckTcpVars;
  descriptor.create = CreateTcp;
  descriptor.uses_io_devices = TcpUsesIoDevices;
  return descriptor;
}

}  // namespace chorus
