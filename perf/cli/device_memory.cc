#include "perf/cli/device_memory.h"

#include "chorus_build_config.h"

#if CHORUS_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace chorus::perf {

#if CHORUS_HAVE_CUDA
namespace {

bool Failed(cudaError_t error, const char* what, std::string* why) {
  cudaGetLastError();
  if (error == cudaErrorInsufficientDriver || error == cudaErrorNoDevice) {
    *why = std::string(what) + ": no CUDA driver or device (" + cudaGetErrorString(error) + ")";
  } else {
    *why = std::string(what) + ": " + cudaGetErrorString(error);
  }
  return false;
}

}  // namespace

void DeviceFree::operator()(unsigned char* pointer) const { cudaFree(pointer); }

DeviceBuffer AllocateDevice(size_t bytes, std::string* why) {
  void* pointer = nullptr;
  const cudaError_t error = cudaMalloc(&pointer, bytes);
  if (error != cudaSuccess) {
    Failed(error, "cudaMalloc", why);
    return nullptr;
  }
  return DeviceBuffer(static_cast<unsigned char*>(pointer));
}

bool CopyToDevice(void* device, const void* host, size_t bytes, std::string* why) {
  const cudaError_t error = cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice);
  return error == cudaSuccess || Failed(error, "cudaMemcpy to the device", why);
}

bool CopyToHost(void* host, const void* device, size_t bytes, std::string* why) {
  const cudaError_t error = cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost);
  return error == cudaSuccess || Failed(error, "cudaMemcpy to the host", why);
}

#else

namespace {
constexpr const char* kNoCuda = "this build has no CUDA support (configure with -Dcuda=enabled)";
}

void DeviceFree::operator()(unsigned char*) const {}

DeviceBuffer AllocateDevice(size_t, std::string* why) {
  *why = kNoCuda;
  return nullptr;
}

bool CopyToDevice(void*, const void*, size_t, std::string* why) {
  *why = kNoCuda;
  return false;
}

bool CopyToHost(void*, const void*, size_t, std::string* why) {
  *why = kNoCuda;
  return false;
}

#endif

}  // namespace chorus::perf
