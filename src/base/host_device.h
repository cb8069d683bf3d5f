// CHORUS_HOST_DEVICE marks the functions the CPU kernels share with the CUDA
// kernels (the element math of kernels/element_math.h and base/half.h), so
// that one definition serves both and the CPU tests check the GPU's math.
// Empty outside nvcc.
#pragma once

#include <cstring>

#if defined(__CUDACC__)
#define CHORUS_HOST_DEVICE __host__ __device__
#else
#define CHORUS_HOST_DEVICE
#endif

namespace chorus {

// The bits of `from` as a To (std::bit_cast, which device code lacks).
template <typename To, typename From>
CHORUS_HOST_DEVICE inline To BitCast(const From& from) {
  static_assert(sizeof(To) == sizeof(From), "BitCast needs equal sizes");
  To to;
#if defined(__CUDA_ARCH__)
  memcpy(&to, &from, sizeof(To));  // CUDA's device memcpy
#else
  std::memcpy(&to, &from, sizeof(To));
#endif
  return to;
}

}  // namespace chorus
