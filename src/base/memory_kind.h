// Where a buffer lives. Every buffer the executor, a transport or a local
// engine (core/local_engine.h) is handed has one of these kinds, so that no
// layer runs CPU code on memory the CPU cannot touch (a CUDA device pointer).
#pragma once

#include <cstdint>

namespace chorus {

enum class MemoryKind : uint8_t {
  kHost,            // ordinary (pageable) host memory
  kCudaDevice,      // cudaMalloc'ed memory of a GPU
  kCudaHostPinned,  // cudaHostAlloc'ed (page-locked) host memory: the CPU may touch it
  // Tests only: host memory the CPU must not touch directly, reached only
  // through its engine (tests/core/fake_device_memory.h). It stands in for a
  // device in the tests of the staging paths, which run without a GPU.
  kFakeDevice,
};
inline constexpr int kNumMemoryKinds = 4;

// A set of kinds, one bit per kind.
using MemoryKindMask = uint32_t;

constexpr MemoryKindMask KindBit(MemoryKind kind) { return MemoryKindMask{1} << static_cast<unsigned>(kind); }

// The kinds the CPU may read and write with plain loads and stores.
inline constexpr MemoryKindMask kCpuAccessibleKinds =
    KindBit(MemoryKind::kHost) | KindBit(MemoryKind::kCudaHostPinned);

inline constexpr MemoryKindMask kAllMemoryKinds = (MemoryKindMask{1} << kNumMemoryKinds) - 1;

constexpr bool Contains(MemoryKindMask mask, MemoryKind kind) { return (mask & KindBit(kind)) != 0; }
constexpr bool IsCpuAccessible(MemoryKind kind) { return Contains(kCpuAccessibleKinds, kind); }

// "host", "cuda_device", "cuda_host_pinned", "fake_device": for messages.
constexpr const char* MemoryKindName(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::kHost: return "host";
    case MemoryKind::kCudaDevice: return "cuda_device";
    case MemoryKind::kCudaHostPinned: return "cuda_host_pinned";
    case MemoryKind::kFakeDevice: return "fake_device";
  }
  return "unknown";
}

}  // namespace chorus
