#include "core/buffer_kinds.h"

#include "core/communicator.h"

namespace chorus {

const char* DescribeMemoryKind(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::kHost: return "host memory";
    case MemoryKind::kCudaDevice: return "CUDA device memory";
    case MemoryKind::kCudaHostPinned: return "CUDA pinned host memory";
    case MemoryKind::kFakeDevice: return "fake device memory";
  }
  return "memory of an unknown kind";
}

Status ClassifyCallBuffers(const Communicator& comm, Operation* op) {
  const MemoryKind send_kind = comm.ClassifyBuffer(op->send);
  const MemoryKind recv_kind = comm.ClassifyBuffer(op->recv);
  // Pinned and pageable host memory mix freely: the CPU touches both.
  if (op->send != nullptr && op->recv != nullptr && IsCpuAccessible(send_kind) != IsCpuAccessible(recv_kind)) {
    return InvalidArgument("sendbuff is ", DescribeMemoryKind(send_kind), " but recvbuff is ",
                           DescribeMemoryKind(recv_kind), "; both must be device memory or both host memory");
  }
  for (auto [buffer, kind] : {std::pair{"sendbuff", send_kind}, std::pair{"recvbuff", recv_kind}}) {
    // Host memory always has its engine: the common case asks nothing more.
    if (kind != MemoryKind::kHost && comm.engines().For(kind) == nullptr) {
      return InvalidArgument(buffer, " is ", DescribeMemoryKind(kind),
                             ", which this build cannot copy or reduce (configure with -Dcuda=auto)");
    }
  }
  op->send_kind = send_kind;
  op->recv_kind = recv_kind;
  return Status::Ok();
}

Status RequireCpuMemory(const Communicator& comm, const char* buffer, const void* pointer, const char* path) {
  const MemoryKind kind = comm.ClassifyBuffer(pointer);
  if (IsCpuAccessible(kind)) return Status::Ok();
  return InvalidArgument(buffer, " is ", DescribeMemoryKind(kind), ", which the CPU code of ", path,
                         " cannot read; pass host memory");
}

}  // namespace chorus
