// Where a rank's helper threads (its host streams' workers, which also
// drive the transports' progress) run: near the rank. A thread inherits its
// creator's affinity; a rank bound to one core would then share that core
// between its computation and its communication. Instead, a bound rank's
// helpers may use every PU of the NUMA domains its binding touches: close to
// its memory and NIC, without taking its own core. An unbound rank's helpers
// are left alone. CHORUS_THREAD_AFFINITY=0 turns this off.
#pragma once

#include "base/status.h"
#include "topology/host_topology.h"

namespace chorus {

// The PUs for the helper threads of the rank `topology` describes; empty:
// leave them as they are (the rank is not bound).
CpuList HelperThreadCpus(const HostTopology& topology);

// CHORUS_THREAD_AFFINITY (1 unless set to 0).
Status HelperThreadPlacementEnabled(bool* enabled);

// Restricts the thread `native_handle` (a pthread_t) to `cpus`.
Status BindThread(unsigned long native_handle, const CpuList& cpus);

}  // namespace chorus
