#include "core/host_allocator.h"

#include <new>

#include "chorus_build_config.h"
#include "core/pointer_kind.h"

#if CHORUS_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace chorus {
namespace {

constexpr std::align_val_t kAlignment{64};

class Pageable final : public HostAllocator {
 public:
  void* Allocate(size_t bytes) override { return ::operator new[](bytes, kAlignment); }
  void Free(void* pointer) override { ::operator delete[](pointer, kAlignment); }
  const char* name() const override { return "pageable"; }
};

#if CHORUS_HAVE_CUDA
// cudaHostAlloc returns page-aligned memory.
class CudaPinned final : public HostAllocator {
 public:
  void* Allocate(size_t bytes) override {
    void* pointer = nullptr;
    if (cudaHostAlloc(&pointer, bytes, cudaHostAllocPortable) != cudaSuccess) {
      cudaGetLastError();  // not the application's error; the caller falls back
      return nullptr;
    }
    return pointer;
  }
  void Free(void* pointer) override {
    cudaFreeHost(pointer);
    cudaGetLastError();
  }
  const char* name() const override { return "CUDA pinned"; }
};
#endif

}  // namespace

HostAllocator& PageableAllocator() {
  static Pageable allocator;  // stateless
  return allocator;
}

HostAllocator& StagingAllocator() {
#if CHORUS_HAVE_CUDA
  static CudaPinned pinned;  // stateless
  if (CudaDevicePresent()) return pinned;
#endif
  return PageableAllocator();
}

}  // namespace chorus
