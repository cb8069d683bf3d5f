// The ibverbs transport's registry entry (transports/registry.cc), built only
// when libibverbs is found (-Dibverbs=auto).
#pragma once

#include "transports/transport_registry.h"

namespace chorus {

TransportDescriptor IbTransportDescriptor();

}  // namespace chorus
