// CUDA device buffers for the CLIs' -G 1 (nccl-tests' default: buffers in
// GPU memory). The sweep fills inputs and checks results in host images of
// the buffers and copies between the two; the timed calls see only device
// memory. Built without CUDA, every function fails saying so.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace chorus::perf {

struct DeviceFree {
  void operator()(unsigned char* pointer) const;
};
using DeviceBuffer = std::unique_ptr<unsigned char, DeviceFree>;

// `bytes` of device memory (cudaMalloc), or null with *why set ("no CUDA
// driver or device (...)", "this build has no CUDA support ...").
DeviceBuffer AllocateDevice(size_t bytes, std::string* why);

// Synchronous copies; false with *why set on a CUDA error.
bool CopyToDevice(void* device, const void* host, size_t bytes, std::string* why);
bool CopyToHost(void* host, const void* device, size_t bytes, std::string* why);

}  // namespace chorus::perf
