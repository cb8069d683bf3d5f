// The built-in transports, from transports/transports.def: adding one is
// its own folder plus one entry there (docs/architecture.md, "How to add a
// transport"). No file outside a transport's folder includes its headers.
#include "chorus_build_config.h"
#include "transports/transport_registry.h"

namespace chorus {

#define CHORUS_TRANSPORT(folder, descriptor, built) TransportDescriptor descriptor();
#include "transports/transports.def"
#undef CHORUS_TRANSPORT

namespace {

std::vector<TransportDescriptor> BuiltinDescriptors() {
  std::vector<TransportDescriptor> descriptors;
  // A transport this build lacks is a discarded statement: its descriptor
  // is declared, never defined nor referenced.
#define CHORUS_TRANSPORT(folder, descriptor, built) \
  if constexpr (built) descriptors.push_back(descriptor());
#include "transports/transports.def"
#undef CHORUS_TRANSPORT
  return descriptors;
}

}  // namespace

const TransportRegistry& BuiltinTransports() {
  // Built once and never changed: a constant table, not mutable state.
  static const TransportRegistry kBuiltin(BuiltinDescriptors());
  return kBuiltin;
}

}  // namespace chorus
