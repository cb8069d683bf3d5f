#include "core/cuda_engine.h"

#include <cuda_runtime_api.h>

#include "base/cuda_status.h"
#include "core/pointer_kind.h"
#include "kernels/cuda/reduce_kernels.h"

namespace chorus {
namespace {

Status CudaStatus(cudaError_t error, const char* what) { return CudaCheck(error, StrCat("CUDA engine: ", what)); }

// A device copy of `bytes` at `host`, when the device cannot read `host`.
class DeviceReadable {
 public:
  DeviceReadable(const void* pointer, size_t bytes, cudaStream_t stream) : pointer_(pointer), stream_(stream) {
    if (ClassifyPointer(pointer) != MemoryKind::kHost) return;  // device or pinned: readable
    status_ = CudaStatus(cudaMallocAsync(&copy_, bytes, stream), "cudaMallocAsync");
    if (status_.ok()) status_ = CudaStatus(cudaMemcpyAsync(copy_, pointer, bytes, cudaMemcpyDefault, stream), "copy in");
    pointer_ = copy_;
  }
  ~DeviceReadable() {
    if (copy_ != nullptr) cudaFreeAsync(copy_, stream_);
  }
  DeviceReadable(const DeviceReadable&) = delete;
  DeviceReadable& operator=(const DeviceReadable&) = delete;

  const void* get() const { return pointer_; }
  const Status& status() const { return status_; }

 private:
  const void* pointer_;
  cudaStream_t stream_;
  void* copy_ = nullptr;
  Status status_;
};

// A non-blocking stream for one thread, destroyed with it.
class ThreadStream {
 public:
  ThreadStream() {
    if (cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking) != cudaSuccess) {
      cudaGetLastError();  // the engine's calls on the fallback report any real failure
      stream_ = nullptr;
    }
  }
  ~ThreadStream() {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    cudaGetLastError();  // at process exit the runtime may be gone already
  }
  ThreadStream(const ThreadStream&) = delete;
  ThreadStream& operator=(const ThreadStream&) = delete;

  // Without a stream of its own (creation failed) the thread's per-thread
  // default stream, which blocks with the legacy one.
  cudaStream_t get() const { return stream_ != nullptr ? stream_ : cudaStreamPerThread; }

 private:
  cudaStream_t stream_ = nullptr;
};

class CudaLocalEngine final : public LocalEngine {
 public:
  MemoryKind kind() const override { return MemoryKind::kCudaDevice; }

  Status Copy(void* dst, const void* src, size_t bytes) override {
    if (bytes == 0 || dst == src) return Status::Ok();
    CHORUS_RETURN_IF_ERROR(
        CudaStatus(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, Stream()), "cudaMemcpyAsync"));
    return CudaStatus(cudaStreamSynchronize(Stream()), "copy");
  }

  Status Reduce(void* dst, const void* a, const void* b, size_t count, DataType dtype, ReduceOp op,
                const void* scale) override {
    if (count == 0) return Status::Ok();
    const size_t bytes = count * DataTypeSize(dtype);
    DeviceReadable first(a, bytes, Stream()), second(b, bytes, Stream());
    CHORUS_RETURN_IF_ERROR(first.status());
    CHORUS_RETURN_IF_ERROR(second.status());
    CHORUS_RETURN_IF_ERROR(
        CudaStatus(cuda::LaunchReduce(dst, first.get(), second.get(), count, dtype, op, Stream()), "reduce kernel"));
    if (scale != nullptr) {
      CHORUS_RETURN_IF_ERROR(CudaStatus(cuda::LaunchScale(dst, dst, count, dtype, scale, Stream()), "scale kernel"));
    }
    return CudaStatus(cudaStreamSynchronize(Stream()), "reduce");
  }

  Status Scale(void* dst, const void* src, size_t count, DataType dtype, const void* scale) override {
    if (count == 0) return Status::Ok();
    DeviceReadable input(src, count * DataTypeSize(dtype), Stream());
    CHORUS_RETURN_IF_ERROR(input.status());
    CHORUS_RETURN_IF_ERROR(CudaStatus(cuda::LaunchScale(dst, input.get(), count, dtype, scale, Stream()), "scale kernel"));
    return CudaStatus(cudaStreamSynchronize(Stream()), "scale");
  }

 private:
  // The calling thread's own non-blocking stream. Not a default stream: the
  // legacy default stream may be held by a linked stream
  // (core/cuda_stream_link.h) until this very thread's collective is done,
  // and a blocking stream would wait for it (a deadlock).
  static cudaStream_t Stream() {
    thread_local ThreadStream stream;
    return stream.get();
  }
};

}  // namespace

LocalEngine& CudaDeviceEngine() {
  static CudaLocalEngine engine;  // stateless
  return engine;
}

}  // namespace chorus
