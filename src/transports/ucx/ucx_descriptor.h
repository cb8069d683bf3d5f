// The UCX transport's registry entry (transports/registry.cc), built only
// when libucx is found (-Ducx=auto).
#pragma once

#include "transports/transport_registry.h"

namespace chorus {

TransportDescriptor UcxTransportDescriptor();

}  // namespace chorus
