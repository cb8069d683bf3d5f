// Picks the kernel table for this CPU. Compiled with the default flags: it
// must run on any x86-64 (or other) CPU, and it is the only caller of the
// *Unchecked() tables, which it calls only when cpuid (and the OS's saved
// register state, which __builtin_cpu_supports also checks) allows.
#include "kernels/kernel_table.h"

#include <initializer_list>
#include <string>
#include <vector>

#include "base/config.h"
#include "base/log.h"

#if CHORUS_KERNELS_X86
#include "kernels/x86_kernel_tables.h"
#endif

namespace chorus::kernels {
namespace {

struct CpuFeatures {
  bool avx2 = false;    // with F16C and FMA
  bool avx512 = false;  // F, BW, VL, DQ, with the AVX2 set
};

CpuFeatures DetectCpu() {
  CpuFeatures features;
#if CHORUS_KERNELS_X86
  __builtin_cpu_init();
  features.avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") &&
                  __builtin_cpu_supports("fma");
  features.avx512 = features.avx2 && __builtin_cpu_supports("avx512f") &&
                    __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                    __builtin_cpu_supports("avx512dq");
#endif
  return features;
}

const CpuFeatures& Cpu() {
  static const CpuFeatures features = DetectCpu();
  return features;
}

}  // namespace

const KernelTable* KernelsFor(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::kPortable:
      return &PortableKernels();
#if CHORUS_KERNELS_X86
    case KernelIsa::kAvx2:
      return Cpu().avx2 ? &Avx2KernelsUnchecked() : nullptr;
    case KernelIsa::kAvx512:
      return Cpu().avx512 ? &Avx512KernelsUnchecked() : nullptr;
#endif
    default:
      return nullptr;
  }
}

// The best table the CPU supports, unless CHORUS_KERNELS asks for a lesser
// one (to compare ISAs or to rule a vector path out). Fixed at first use.
const KernelTable& ActiveKernels() {
  static const KernelTable* const table = [] {
    const std::string wanted = EnvValue("CHORUS_KERNELS");
    if (wanted == "portable") return &PortableKernels();
    std::vector<KernelIsa> order = {KernelIsa::kAvx512, KernelIsa::kAvx2};
    if (wanted == "avx2") {
      order = {KernelIsa::kAvx2};
    } else if (wanted != "auto" && wanted != "avx512") {
      CHORUS_WARN("INIT", "CHORUS_KERNELS='", wanted, "' is not auto, avx512, avx2 or portable; using auto");
    }
    for (KernelIsa isa : order) {
      if (const KernelTable* candidate = KernelsFor(isa)) return candidate;
    }
    return &PortableKernels();
  }();
  return *table;
}

}  // namespace chorus::kernels
