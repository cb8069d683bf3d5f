// ncclConfig_t to chorusConfig_t. What maps: `blocking` (every call of this
// build completes before it returns, which NCCL's non-blocking mode
// permits, so both values behave correctly) and `commName` (Chorus's
// informative communicator name). Everything else concerns GPU kernels
// or NCCL's network plugins and is ignored: cgaClusterSize, minCTAs,
// maxCTAs, netName, splitShare, trafficClass, collnetEnable, CTAPolicy,
// shrinkShare, nvlsCTAs, nChannelsPerNetPeer, nvlinkCentricSched.
#pragma once

#include <nccl.h>

#include "chorus/chorus.h"

namespace chorus_nccl {

// Validates `config` as NCCL does (initialised by NCCL_CONFIG_INITIALIZER,
// blocking 0 or 1) and fills *out. NULL gives Chorus's defaults. On
// failure sets the thread's last error naming `api`.
ncclResult_t MapConfig(const ncclConfig_t* config, const char* api, chorusConfig_t* out);

}  // namespace chorus_nccl
