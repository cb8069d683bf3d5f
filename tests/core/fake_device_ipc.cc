#include "fake_device_ipc.h"

#include <cstring>

namespace chorus::testing {

FakeDeviceMemory* FakeGpu::Find(const void* pointer) const {
  for (FakeDeviceMemory* memory : memories_) {
    if (memory->Contains(pointer)) return memory;
  }
  return nullptr;
}

size_t FakeGpu::IndexOf(const FakeDeviceMemory* memory) const {
  for (size_t i = 0; i < memories_.size(); ++i) {
    if (memories_[i] == memory) return i;
  }
  return memories_.size();
}

Status FakeDeviceIpc::Export(const void* pointer, ExportedBuffer* out) {
  FakeDeviceMemory* memory = gpu_->Find(pointer);
  if (memory == nullptr) return InvalidArgument("fake IPC: ", reinterpret_cast<uintptr_t>(pointer), " is not fake device memory");
  if (gpu_->refuse_exports) return InvalidArgument("fake IPC: exports refused");
  ++gpu_->exports;
  *out = ExportedBuffer();
  const uint8_t* base = memory->data();
  std::memcpy(out->handle.bytes, &base, sizeof(base));
  out->allocation_id = gpu_->IndexOf(memory) + 1;
  out->offset = static_cast<const uint8_t*>(pointer) - base;
  return Status::Ok();
}

Status FakeDeviceIpc::Open(const IpcHandle& handle, void** base) {
  uint8_t* address = nullptr;
  std::memcpy(&address, handle.bytes, sizeof(address));
  if (gpu_->Find(address) == nullptr) return InvalidArgument("fake IPC: bad handle");
  ++gpu_->opens;
  *base = address;
  return Status::Ok();
}

void FakeDeviceIpc::Close(void*) { ++gpu_->closes; }

void* FakeDeviceIpc::Translate(const void* pointer) const {
  FakeDeviceMemory* memory = gpu_->Find(pointer);
  return memory != nullptr ? memory->Backing(pointer) : const_cast<void*>(pointer);
}

Status FakeDeviceIpc::Copy(void* dst, const void* src, size_t bytes) {
  ++gpu_->copies;
  if (bytes > 0) std::memmove(Translate(dst), Translate(src), bytes);
  return Status::Ok();
}

namespace {

Status MakeFakeIpc(void* context, const TransportOptions& options, std::unique_ptr<DeviceIpc>* out) {
  auto* self = static_cast<FakeIpcFactory*>(context);
  const uint64_t token = self->one_process ? 1 : static_cast<uint64_t>(options.rank) + 1;
  *out = std::make_unique<FakeDeviceIpc>(self->gpu, token);
  return Status::Ok();
}

}  // namespace

FakeIpcFactory::FakeIpcFactory(FakeGpu* g, bool one) : gpu(g), one_process(one) {
  factory.make = MakeFakeIpc;
  factory.context = this;
}

}  // namespace chorus::testing
