// chorusMemAlloc / chorusMemFree / chorusMemGetSize: the process's shared
// heap (base/shared_heap.h) at the C API.
#include <cstddef>

#include "base/shared_heap.h"
#include "chorus/chorus.h"
#include "core/handles.h"

using chorus::InvalidArgument;
using chorus::SharedHeap;

chorusResult_t chorusMemAlloc(void** ptr, size_t size) {
  if (ptr == nullptr) return chorus::Report(nullptr, InvalidArgument("chorusMemAlloc: ptr is NULL"));
  *ptr = nullptr;
  if (size == 0) return chorus::Report(nullptr, InvalidArgument("chorusMemAlloc: size is 0"));
  SharedHeap* heap = SharedHeap::Process();
  if (heap == nullptr) {
    return chorus::Report(nullptr, chorus::SystemError("chorusMemAlloc: no shared heap (CHORUS_SHARED_HEAP=0, the "
                                                       "system refused a memfd or its mapping, or ",
                                                       SharedHeap::kMaxHeaps, " heaps made already)"));
  }
  *ptr = heap->Allocate(size);
  if (*ptr != nullptr) return chorusSuccess;
  return chorus::Report(nullptr, chorus::SystemError("chorusMemAlloc: the shared heap of ", heap->bytes(),
                                                     " bytes has no room for ", size, " more"));
}

// A pointer that is not a block is answered without a word (no message, no
// last error): an allocator that serves malloc asks this on its free path,
// where making a message would allocate and free again.
chorusResult_t chorusMemFree(void* ptr) {
  SharedHeap* heap = SharedHeap::Owning(ptr);
  return heap != nullptr && heap->Free(ptr) ? chorusSuccess : chorusInvalidArgument;
}

chorusResult_t chorusMemGetSize(const void* ptr, size_t* size) {
  if (size == nullptr) return chorus::Report(nullptr, InvalidArgument("chorusMemGetSize: size is NULL"));
  SharedHeap* heap = SharedHeap::Owning(ptr);
  *size = heap != nullptr ? heap->BlockBytes(ptr) : 0;
  return *size > 0 ? chorusSuccess : chorusInvalidArgument;
}
