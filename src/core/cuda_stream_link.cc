#include "core/cuda_stream_link.h"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <chrono>
#include <thread>

#include "base/log.h"
#include "base/cuda_status.h"

namespace chorus {
namespace {

using WaitValueFn = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);

// Polls `event` until it completes or `deadline`: a CPU thread that sleeps in
// cudaEventSynchronize could not be bounded.
Status PollEvent(cudaEvent_t event, Deadline deadline, const char* what) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    const cudaError_t state = cudaEventQuery(event);
    if (state == cudaSuccess) return Status::Ok();
    if (state != cudaErrorNotReady) return CudaCheck(state, what);
    cudaGetLastError();
    if (deadline.Expired()) {
      return Status(chorusTimeout, StrCat(what, ": the CUDA work before it did not finish in time"));
    }
    // Yield for a while (short kernels), then sleep a little per poll.
    if (std::chrono::steady_clock::now() - start < std::chrono::microseconds(50)) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
}

class CudaMark final : public DeviceMark {
 public:
  explicit CudaMark(cudaEvent_t event) : event_(event) {}
  ~CudaMark() override { cudaEventDestroy(event_); }
  Status Wait(Deadline deadline) override {
    return PollEvent(event_, deadline, "waiting for the CUDA stream's earlier work");
  }

 private:
  cudaEvent_t event_;
};

class CudaStreamLink final : public DeviceStreamLink {
 public:
  CudaStreamLink(cudaStream_t stream, int wait_ms, WaitValueFn wait_value, uint32_t* word, CUdeviceptr device_word)
      : DeviceStreamLink(wait_ms), stream_(stream), wait_value_(wait_value), word_(word), device_word_(device_word) {}

  // The stream may still have waits on the word queued: it is freed once
  // the stream has passed them, or kept (four bytes) when the stream does
  // not get there in time.
  ~CudaStreamLink() override {
    cudaEvent_t passed = nullptr;
    Status status = CudaCheck(cudaEventCreateWithFlags(&passed, cudaEventDisableTiming), "cudaEventCreate");
    if (status.ok()) status = CudaCheck(cudaEventRecord(passed, stream_), "cudaEventRecord");
    if (status.ok()) status = PollEvent(passed, Deadline::AfterMs(wait_ms()), "destroying a CUDA-linked stream");
    if (passed != nullptr) cudaEventDestroy(passed);
    if (status.ok()) {
      cudaFreeHost(word_);
    } else {
      CHORUS_WARN("INIT", "a CUDA-linked stream keeps its 4-byte wait word: ", status.message());
    }
    cudaGetLastError();
  }

 protected:
  Status MarkQueued(std::unique_ptr<DeviceMark>* mark) override {
    cudaEvent_t event = nullptr;
    cudaError_t error = cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
    if (error != cudaSuccess) return CudaCheck(error, "cudaEventCreateWithFlags");
    error = cudaEventRecord(event, stream_);
    if (error != cudaSuccess) {
      cudaEventDestroy(event);
      return CudaCheck(error, "cudaEventRecord on the linked CUDA stream");
    }
    *mark = std::make_unique<CudaMark>(event);
    return Status::Ok();
  }

  Status HoldUntil(uint32_t ticket) override {
    const CUresult result =
        wait_value_(reinterpret_cast<CUstream>(stream_), device_word_, ticket, CU_STREAM_WAIT_VALUE_GEQ);
    if (result == CUDA_SUCCESS) return Status::Ok();
    return Status(chorusSystemError, StrCat("cuStreamWaitValue32 on the linked CUDA stream failed (CUresult ",
                                            static_cast<int>(result), ")"));
  }

  void Release(uint32_t ticket) override { __atomic_store_n(word_, ticket, __ATOMIC_RELEASE); }

 private:
  cudaStream_t stream_;
  WaitValueFn wait_value_;
  uint32_t* word_;  // mapped pinned host memory the stream reads
  CUdeviceptr device_word_;
};

}  // namespace

Status MakeCudaStreamLink(void* cuda_stream, int wait_ms, std::unique_ptr<DeviceStreamLink>* out) {
  const auto stream = static_cast<cudaStream_t>(cuda_stream);
  int devices = 0;
  cudaError_t error = cudaGetDeviceCount(&devices);
  if (error != cudaSuccess) return CudaCheck(error, "chorusStreamFromCuda");
  if (devices == 0) return Status(chorusSystemError, "chorusStreamFromCuda: no CUDA device");
  void* entry = nullptr;
  CHORUS_RETURN_IF_ERROR(CudaDriverEntry("cuStreamWaitValue32", "chorusStreamFromCuda", &entry));
  const auto wait_value = reinterpret_cast<WaitValueFn>(entry);
  void* word = nullptr;
  error = cudaHostAlloc(&word, sizeof(uint32_t), cudaHostAllocMapped | cudaHostAllocPortable);
  if (error != cudaSuccess) return CudaCheck(error, "chorusStreamFromCuda: cudaHostAlloc");
  *static_cast<uint32_t*>(word) = 0;
  void* device_word = nullptr;
  error = cudaHostGetDevicePointer(&device_word, word, 0);
  CUresult probe = CUDA_SUCCESS;
  // A wait already satisfied (ticket 0): proves the device takes stream
  // memory operations before any collective depends on it.
  if (error == cudaSuccess) {
    probe = wait_value(reinterpret_cast<CUstream>(stream), reinterpret_cast<CUdeviceptr>(device_word), 0,
                       CU_STREAM_WAIT_VALUE_GEQ);
  }
  if (error != cudaSuccess || probe != CUDA_SUCCESS) {
    cudaFreeHost(word);
    if (error != cudaSuccess) return CudaCheck(error, "chorusStreamFromCuda: cudaHostGetDevicePointer");
    return Status(chorusSystemError,
                  StrCat("chorusStreamFromCuda: the CUDA stream takes no memory waits (cuStreamWaitValue32: CUresult ",
                         static_cast<int>(probe), ")"));
  }
  *out = std::make_unique<CudaStreamLink>(stream, wait_ms, wait_value, static_cast<uint32_t*>(word),
                                          reinterpret_cast<CUdeviceptr>(device_word));
  return Status::Ok();
}

}  // namespace chorus
