#include "fake_device_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "kernels/reduce.h"

namespace chorus::testing {

FakeDeviceMemory::FakeDeviceMemory(size_t bytes) : size_(bytes), backing_(bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  mapped_ = (bytes + page - 1) / page * page + page;  // never empty
  void* range = mmap(nullptr, mapped_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (range == MAP_FAILED) std::abort();
  base_ = static_cast<uint8_t*>(range);
}

FakeDeviceMemory::~FakeDeviceMemory() { munmap(base_, mapped_); }

bool FakeDeviceMemory::Contains(const void* pointer) const {
  const auto* byte = static_cast<const uint8_t*>(pointer);
  return byte >= base_ && byte < base_ + mapped_;
}

uint8_t* FakeDeviceMemory::Backing(const void* pointer) {
  if (!Contains(pointer)) std::abort();
  return backing_.data() + (static_cast<const uint8_t*>(pointer) - base_);
}

void FakeDeviceMemory::Upload(size_t offset, const void* host, size_t bytes) {
  if (offset + bytes > size_) std::abort();
  if (bytes > 0) std::memcpy(backing_.data() + offset, host, bytes);
}

void FakeDeviceMemory::Download(void* host, size_t offset, size_t bytes) const {
  if (offset + bytes > size_) std::abort();
  if (bytes > 0) std::memcpy(host, backing_.data() + offset, bytes);
}

FakeDeviceMemory* FakeDeviceEngine::Holder(const void* pointer) const {
  if (memory_->Contains(pointer)) return memory_;
  for (FakeDeviceMemory* peer : peers_) {
    if (peer->Contains(pointer)) return peer;
  }
  return nullptr;
}

void* FakeDeviceEngine::Translate(const void* pointer) const {
  FakeDeviceMemory* holder = Holder(pointer);
  return holder != nullptr ? holder->Backing(pointer) : const_cast<void*>(pointer);
}

bool FakeDeviceEngine::OnDevice(const void* pointer) const { return Holder(pointer) != nullptr; }

Status FakeDeviceEngine::Copy(void* dst, const void* src, size_t bytes) {
  const bool to_device = OnDevice(dst), from_device = OnDevice(src);
  if (to_device && from_device) {
    ++counts_.copies_on_device;
  } else if (to_device) {
    ++counts_.copies_to_device;
    counts_.bytes_to_device += bytes;
  } else if (from_device) {
    ++counts_.copies_from_device;
    counts_.bytes_from_device += bytes;
  } else {
    ++counts_.copies_on_host;
  }
  std::memmove(Translate(dst), Translate(src), bytes);
  return Status::Ok();
}

Status FakeDeviceEngine::Reduce(void* dst, const void* a, const void* b, size_t count, DataType dtype, ReduceOp op,
                                const void* scale) {
  ++counts_.reduces;
  void* out = Translate(dst);
  ReduceKernel(out, Translate(a), Translate(b), count, dtype, op);
  if (scale != nullptr) ScaleKernel(out, out, count, dtype, scale);
  return Status::Ok();
}

Status FakeDeviceEngine::Scale(void* dst, const void* src, size_t count, DataType dtype, const void* scale) {
  ++counts_.scales;
  ScaleKernel(Translate(dst), Translate(src), count, dtype, scale);
  return Status::Ok();
}

LocalEngines FakeDeviceEngine::Table() {
  LocalEngines table = DefaultLocalEngines();
  table.by_kind[static_cast<size_t>(MemoryKind::kFakeDevice)] = this;
  return table;
}

}  // namespace chorus::testing
