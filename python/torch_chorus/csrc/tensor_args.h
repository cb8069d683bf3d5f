// Checks and staging of the tensors torch.distributed hands the backend,
// shared by the process group's collectives, point-to-point operations and
// extensions. TORCH_CHECK failures name the operation ("Chorus allreduce:
// ...") so that the user sees which call was refused.
#pragma once

#include <ATen/ATen.h>
#include <chorus/chorus.h>

#include <string>
#include <vector>

namespace torch_chorus {

// chorusGetErrorString(result), then the communicator's last error if any.
std::string ChorusMessage(chorusResult_t result, chorusComm_t comm);

void CheckCpu(const at::Tensor& tensor, const char* op);
void CheckSingle(const std::vector<at::Tensor>& tensors, const char* op);
void CheckSameShape(const at::Tensor& a, const at::Tensor& b, const char* op);

// A tensor as Chorus gets it: the user's own storage when contiguous, else
// a contiguous copy that is written back after the operation.
struct Staged {
  at::Tensor user, buffer;
  explicit Staged(const at::Tensor& tensor) : user(tensor), buffer(tensor.is_contiguous() ? tensor : tensor.contiguous()) {}
  bool copied() const { return !buffer.is_same(user); }
  void CopyBack() const {
    if (copied()) user.copy_(buffer);
  }
};

// Bytes as Chorus's uint8 elements: data movement needs no arithmetic.
inline size_t Bytes(const at::Tensor& tensor) { return tensor.numel() * tensor.element_size(); }

// "allreduce of 1024 Float elements", for messages and the profiler.
std::string Describe(const char* op, const at::Tensor& tensor);

// One buffer holding `tensors` (same dtype) back to back.
at::Tensor Flatten(const std::vector<at::Tensor>& tensors);
// Copies consecutive slices of `flat` into `tensors`.
void Unflatten(const at::Tensor& flat, const std::vector<at::Tensor>& tensors);

}  // namespace torch_chorus
