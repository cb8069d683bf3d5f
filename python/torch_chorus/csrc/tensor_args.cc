#include "tensor_args.h"

#include <c10/util/Exception.h>

namespace torch_chorus {

std::string ChorusMessage(chorusResult_t result, chorusComm_t comm) {
  const char* detail = chorusGetLastError(comm);
  std::string message = chorusGetErrorString(result);
  if (detail != nullptr && detail[0] != '\0') message += std::string(": ") + detail;
  return message;
}

void CheckCpu(const at::Tensor& tensor, const char* op) {
  TORCH_CHECK(tensor.defined(), "Chorus ", op, ": undefined tensor");
  TORCH_CHECK(!tensor.is_cuda(), "Chorus ", op,
              ": CUDA tensors need Chorus's CUDA build, which is not available yet; move the tensor to the CPU");
  TORCH_CHECK(tensor.device().is_cpu(), "Chorus ", op, ": only CPU tensors are supported, got ", tensor.device());
  TORCH_CHECK(tensor.layout() == at::kStrided, "Chorus ", op, ": only dense (strided) tensors are supported");
}

void CheckSingle(const std::vector<at::Tensor>& tensors, const char* op) {
  TORCH_CHECK(tensors.size() == 1, "Chorus ", op, ": expects one tensor per process, got ", tensors.size());
  CheckCpu(tensors[0], op);
}

void CheckSameShape(const at::Tensor& a, const at::Tensor& b, const char* op) {
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "Chorus ", op, ": dtypes differ (", a.scalar_type(), " vs ",
              b.scalar_type(), ")");
  TORCH_CHECK(a.numel() == b.numel(), "Chorus ", op, ": tensor sizes differ (", a.numel(), " vs ", b.numel(),
              " elements)");
}

std::string Describe(const char* op, const at::Tensor& tensor) {
  return std::string(op) + " of " + std::to_string(tensor.numel()) + " " + std::string(c10::toString(tensor.scalar_type())) +
         " elements";
}

at::Tensor Flatten(const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> flat;
  flat.reserve(tensors.size());
  for (const at::Tensor& t : tensors) flat.push_back(t.reshape({-1}));
  return at::cat(flat);
}

void Unflatten(const at::Tensor& flat, const std::vector<at::Tensor>& tensors) {
  int64_t offset = 0;
  for (const at::Tensor& t : tensors) {
    t.copy_(flat.narrow(0, offset, t.numel()).view(t.sizes()));
    offset += t.numel();
  }
}

}  // namespace torch_chorus
