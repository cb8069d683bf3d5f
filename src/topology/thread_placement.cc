#include "topology/thread_placement.h"

#include <pthread.h>
#include <sched.h>

#include <cerrno>
#include <string>

#include "base/config.h"

namespace chorus {

CpuList HelperThreadCpus(const HostTopology& topology) {
  if (!topology.bound()) return {};
  CpuList cpus = topology.binding;
  for (int domain : topology.BindingNumaDomains()) cpus = Union(cpus, topology.numa[domain].cpus);
  return cpus;
}

Status HelperThreadPlacementEnabled(bool* enabled) {
  const std::string value = EnvValue("CHORUS_THREAD_AFFINITY");
  if (value != "0" && value != "1") return InvalidArgument("CHORUS_THREAD_AFFINITY must be 0 or 1, not '", value, "'");
  *enabled = value == "1";
  return Status::Ok();
}

Status BindThread(unsigned long native_handle, const CpuList& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus) {
    if (cpu < 0 || cpu >= CPU_SETSIZE) return InvalidArgument("CPU ", cpu, " is outside what affinity masks hold");
    CPU_SET(cpu, &set);
  }
  const int err = pthread_setaffinity_np(static_cast<pthread_t>(native_handle), sizeof(set), &set);
  return err == 0 ? Status::Ok() : ErrnoError(err, "pthread_setaffinity_np");
}

}  // namespace chorus
