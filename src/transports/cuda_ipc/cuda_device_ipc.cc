#include "transports/cuda_ipc/cuda_device_ipc.h"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstring>
#include <vector>

#include "base/cuda_status.h"
#include "transports/socket/socket.h"  // FillRandom

namespace chorus {
namespace {

using PointerGetAttributeFn = CUresult (*)(void* data, CUpointer_attribute attribute, CUdeviceptr pointer);
using MemGetAddressRangeFn = CUresult (*)(CUdeviceptr* base, size_t* size, CUdeviceptr pointer);

// Random per process, fixed once made: a constant, not mutable state.
uint64_t ThisProcessToken() {
  static const uint64_t token = [] {
    uint64_t value = 0;
    if (!FillRandom(&value, sizeof(value)).ok()) value = 0;
    return value;
  }();
  return token;
}

// Makes the communicator's device current for the scope of a call and puts
// the caller's back.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) {
      cudaGetLastError();
      previous_ = -1;
    }
    if (previous_ != device) cudaSetDevice(device);
    else previous_ = -1;
  }
  ~DeviceScope() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }

 private:
  int previous_ = -1;
};

class CudaDeviceIpc final : public DeviceIpc {
 public:
  ~CudaDeviceIpc() override {
    if (stream_ != nullptr) {
      DeviceScope scope(device_);
      cudaStreamDestroy(stream_);
    }
  }

  Status Init() {
    CHORUS_RETURN_IF_ERROR(CudaCheck(cudaGetDevice(&device_), "CUDA IPC: cudaGetDevice"));
    void* entry = nullptr;
    CHORUS_RETURN_IF_ERROR(CudaDriverEntry("cuPointerGetAttribute", "CUDA IPC", &entry));
    get_attribute_ = reinterpret_cast<PointerGetAttributeFn>(entry);
    CHORUS_RETURN_IF_ERROR(CudaDriverEntry("cuMemGetAddressRange", "CUDA IPC", &entry));
    address_range_ = reinterpret_cast<MemGetAddressRangeFn>(entry);
    return CudaCheck(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "CUDA IPC: cudaStreamCreate");
  }

  MemoryKind kind() const override { return MemoryKind::kCudaDevice; }
  uint64_t ProcessToken() const override { return ThisProcessToken(); }

  Status Export(const void* pointer, ExportedBuffer* out) override {
    const auto address = reinterpret_cast<CUdeviceptr>(pointer);
    unsigned long long id = 0;
    if (get_attribute_(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, address) != CUDA_SUCCESS) {
      return Status(chorusSystemError, "CUDA IPC: cuPointerGetAttribute(BUFFER_ID) failed");
    }
    CUdeviceptr base = 0;
    size_t size = 0;
    if (address_range_(&base, &size, address) != CUDA_SUCCESS) {
      return Status(chorusSystemError, "CUDA IPC: cuMemGetAddressRange failed");
    }
    out->allocation_id = id;
    out->offset = address - base;
    for (const Exported& exported : exported_) {
      if (exported.id == id) {
        out->handle = exported.handle;
        return Status::Ok();
      }
    }
    cudaIpcMemHandle_t handle;
    DeviceScope scope(device_);
    CHORUS_RETURN_IF_ERROR(
        CudaCheck(cudaIpcGetMemHandle(&handle, reinterpret_cast<void*>(base)), "CUDA IPC: cudaIpcGetMemHandle"));
    static_assert(sizeof(handle) == sizeof(out->handle.bytes), "cudaIpcMemHandle_t is 64 bytes");
    std::memcpy(out->handle.bytes, &handle, sizeof(handle));
    // Allocation ids are never reused in a process: old entries only cost
    // a lookup, so the table is bounded and its oldest entry dropped.
    if (exported_.size() == kMaxExported) exported_.erase(exported_.begin());
    exported_.push_back({id, out->handle});
    return Status::Ok();
  }

  Status Open(const IpcHandle& handle, void** base) override {
    cudaIpcMemHandle_t cuda_handle;
    std::memcpy(&cuda_handle, handle.bytes, sizeof(cuda_handle));
    DeviceScope scope(device_);
    return CudaCheck(cudaIpcOpenMemHandle(base, cuda_handle, cudaIpcMemLazyEnablePeerAccess),
                     "CUDA IPC: cudaIpcOpenMemHandle");
  }

  void Close(void* base) override {
    DeviceScope scope(device_);
    if (cudaIpcCloseMemHandle(base) != cudaSuccess) cudaGetLastError();
  }

  Status Copy(void* dst, const void* src, size_t bytes) override {
    if (bytes == 0) return Status::Ok();
    DeviceScope scope(device_);
    CHORUS_RETURN_IF_ERROR(
        CudaCheck(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_), "CUDA IPC: cudaMemcpyAsync"));
    return CudaCheck(cudaStreamSynchronize(stream_), "CUDA IPC: cudaStreamSynchronize");
  }

 private:
  static constexpr size_t kMaxExported = 256;
  struct Exported {
    uint64_t id;
    IpcHandle handle;
  };
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  PointerGetAttributeFn get_attribute_ = nullptr;
  MemGetAddressRangeFn address_range_ = nullptr;
  std::vector<Exported> exported_;
};

}  // namespace

Status CreateCudaDeviceIpc(std::unique_ptr<DeviceIpc>* out) {
  auto ipc = std::make_unique<CudaDeviceIpc>();
  CHORUS_RETURN_IF_ERROR(ipc->Init());
  *out = std::move(ipc);
  return Status::Ok();
}

}  // namespace chorus
