// The x86 kernel tables, each defined in a file compiled with its own ISA
// flags. "Unchecked": calling one runs instructions of that ISA, so only
// kernel_dispatch.cc calls them, after it has checked the CPU.
#pragma once

#include "kernels/kernel_table.h"

namespace chorus::kernels {

// AVX2 + F16C + FMA (x86_avx2_kernels.cc).
const KernelTable& Avx2KernelsUnchecked();

// AVX-512 F/BW/VL/DQ + F16C + FMA (x86_avx512_kernels.cc).
const KernelTable& Avx512KernelsUnchecked();

}  // namespace chorus::kernels
