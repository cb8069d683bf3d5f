#include "transports/cuda_ipc/cuda_ipc_endpoint.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "transports/shm/shm_names.h"  // ProcessGone

namespace chorus {
namespace {

// Peer allocations kept mapped: opening one costs far more than a message
// (a CUDA IPC open is milliseconds), and training reuses a few buffers.
constexpr size_t kMaxMappings = 64;
// Combining a pulled message for a CPU combiner goes through host pieces of
// this size.
constexpr size_t kBouncePieceBytes = 1 << 20;
// How often a sender waiting for an acknowledgement checks that the peer
// process still lives.
constexpr auto kLivenessPeriod = std::chrono::milliseconds(100);

}  // namespace

struct CudaIpcEndpoint::SendOp {
  TransferRequest* user = nullptr;
  PullDescriptor descriptor;
  TransferRequest descriptor_request;
  TransferRequest data_request;  // kInline
  std::vector<uint8_t> bounce;   // kInline of device memory that could not be exported
  bool staged = false;           // this send's bytes are in `bounce`
  std::chrono::steady_clock::time_point checked;  // kPull: last liveness check
};

struct CudaIpcEndpoint::RecvOp {
  TransferRequest* user = nullptr;
  bool passthrough = false;  // a host call queued behind a device call's receive
  bool descriptor_posted = false;
  PullDescriptor descriptor;
  TransferRequest descriptor_request;
  TransferRequest data_request;
  // Inline bytes into device memory: copied in piece by piece as they
  // arrive (a combiner on the carrier), or landed in `bounce` first.
  CudaIpcEndpoint* endpoint = nullptr;
  ReceiveCombiner copy_in;
  Status failure;
  std::vector<uint8_t> bounce;
  bool bounced = false;
};

CudaIpcEndpoint::CudaIpcEndpoint(const Peer& peer, Endpoint* carrier, DeviceIpc* ipc, PullAcks* acks)
    : peer_(peer), carrier_(carrier), ipc_(ipc), acks_(acks) {}

CudaIpcEndpoint::~CudaIpcEndpoint() { Shutdown(); }

void CudaIpcEndpoint::Shutdown() {
  shut_down_ = true;
  for (const Mapping& mapping : mappings_) ipc_->Close(mapping.base);
  mappings_.clear();
}

Status CudaIpcEndpoint::PostSend(TransferRequest* request) {
  if (!DeviceCall(*request)) return carrier_->PostSend(request);
  SendOp* op = send_ops_.Take();
  op->user = request;
  op->staged = false;
  op->descriptor = PullDescriptor();
  op->descriptor.bytes = request->bytes;
  const bool device_bytes = request->kind == ipc_->kind();
  Status status;
  if (request->bytes == 0) {
    op->descriptor.mode = PullMode::kEmpty;
  } else if (device_bytes && peer_.same_process) {
    op->descriptor.mode = PullMode::kPull;
    op->descriptor.address = reinterpret_cast<uint64_t>(request->buffer);
  } else if (device_bytes && ipc_->Export(request->buffer, &op->descriptor.buffer).ok()) {
    op->descriptor.mode = PullMode::kPull;
  } else {
    // Host memory, or device memory the runtime cannot export (managed
    // memory): the bytes cross the carrier.
    op->descriptor.mode = PullMode::kInline;
    if (device_bytes) status = StageForInline(op);
  }
  if (status.ok() && op->descriptor.mode == PullMode::kPull) op->descriptor.sequence = ++pull_sequence_;
  op->descriptor_request = TransferRequest();
  op->descriptor_request.buffer = &op->descriptor;
  op->descriptor_request.bytes = sizeof(op->descriptor);
  op->descriptor_request.tag = request->tag ^ kPullDescriptorTagBit;
  if (status.ok()) status = carrier_->PostSend(&op->descriptor_request);
  if (status.ok() && op->descriptor.mode == PullMode::kInline) {
    op->data_request = TransferRequest();
    op->data_request.buffer = op->staged ? op->bounce.data() : request->buffer;
    op->data_request.bytes = request->bytes;
    op->data_request.tag = request->tag;
    op->data_request.memory = op->staged ? MemoryHandle() : request->memory;
    status = carrier_->PostSend(&op->data_request);
    ++counts_.inline_sends;
  }
  // A failed post leaves the transport broken (the caller shuts it down);
  // the op stays out of the free list, since the carrier may hold part of it.
  if (!status.ok()) return status;
  op->checked = std::chrono::steady_clock::now();
  sends_.push_back(op);
  return Status::Ok();
}

Status CudaIpcEndpoint::StageForInline(SendOp* op) {
  op->staged = true;
  op->bounce.resize(op->user->bytes);
  return ipc_->Copy(op->bounce.data(), op->user->buffer, op->user->bytes);
}

Status CudaIpcEndpoint::PostRecv(TransferRequest* request) {
  const bool device = DeviceCall(*request);
  // A host call's receive goes to the carrier at once unless a device
  // call's receive ahead of it has not yet posted what it receives.
  if (!device && receives_.empty()) return carrier_->PostRecv(request);
  RecvOp* op = recv_ops_.Take();
  op->user = request;
  op->passthrough = !device;
  op->descriptor_posted = false;
  op->failure = Status::Ok();
  op->bounced = false;
  receives_.push_back(op);
  return PumpReceives();
}

Status CudaIpcEndpoint::Progress() {
  if (shut_down_) return Status::Ok();
  CHORUS_RETURN_IF_ERROR(PumpReceives());
  for (size_t i = 0; i < landing_.size();) {
    RecvOp* op = landing_[i];
    if (!op->data_request.done) {
      ++i;
      continue;
    }
    CHORUS_RETURN_IF_ERROR(FinishLanded(op));
    landing_.erase(landing_.begin() + static_cast<std::ptrdiff_t>(i));
    recv_ops_.Give(op);
  }
  return CheckSends();
}

Status CudaIpcEndpoint::PumpReceives() {
  while (!receives_.empty()) {
    RecvOp* op = receives_.front();
    if (op->passthrough) {
      CHORUS_RETURN_IF_ERROR(carrier_->PostRecv(op->user));
    } else {
      if (!op->descriptor_posted) {
        op->descriptor_request = TransferRequest();
        op->descriptor_request.buffer = &op->descriptor;
        op->descriptor_request.bytes = sizeof(op->descriptor);
        op->descriptor_request.tag = op->user->tag ^ kPullDescriptorTagBit;
        op->descriptor_posted = true;
        CHORUS_RETURN_IF_ERROR(carrier_->PostRecv(&op->descriptor_request));
      }
      if (!op->descriptor_request.done) return Status::Ok();
      bool landing = false;
      CHORUS_RETURN_IF_ERROR(OnDescriptor(op, &landing));
      if (landing) {
        receives_.pop_front();
        landing_.push_back(op);
        continue;
      }
    }
    receives_.pop_front();
    recv_ops_.Give(op);
  }
  return Status::Ok();
}

Status CudaIpcEndpoint::OnDescriptor(RecvOp* op, bool* landing) {
  const PullDescriptor& descriptor = op->descriptor;
  if (descriptor.magic != PullDescriptor::kMagic || descriptor.bytes != op->user->bytes) {
    return InternalError("CUDA IPC: rank ", peer_.rank, " described a message of ", descriptor.bytes,
                         " bytes where ", op->user->bytes, " were expected (corrupt stream, or ranks called "
                         "different operations)");
  }
  switch (descriptor.mode) {
    case PullMode::kEmpty:
      op->user->done = true;
      return Status::Ok();
    case PullMode::kPull:
      CHORUS_RETURN_IF_ERROR(Pull(op));
      acks_->Acknowledge(peer_.rank, descriptor.sequence);
      ++counts_.pulls;
      op->user->done = true;
      return Status::Ok();
    case PullMode::kInline:
      *landing = true;
      return PostInline(op);
  }
  return InternalError("CUDA IPC: rank ", peer_.rank, " sent a descriptor of unknown mode ",
                       static_cast<uint32_t>(descriptor.mode));
}

Status CudaIpcEndpoint::PeerSource(const PullDescriptor& descriptor, const uint8_t** source) {
  if (peer_.same_process) {
    *source = reinterpret_cast<const uint8_t*>(descriptor.address);
    return Status::Ok();
  }
  const ExportedBuffer& buffer = descriptor.buffer;
  auto found = std::find_if(mappings_.begin(), mappings_.end(), [&](const Mapping& mapping) {
    return mapping.allocation_id == buffer.allocation_id &&
           std::memcmp(mapping.handle.bytes, buffer.handle.bytes, sizeof(buffer.handle.bytes)) == 0;
  });
  if (found != mappings_.end()) {
    std::rotate(found, found + 1, mappings_.end());  // most recently used last
  } else {
    if (mappings_.size() == kMaxMappings) {
      ipc_->Close(mappings_.front().base);
      mappings_.erase(mappings_.begin());
    }
    Mapping mapping;
    mapping.allocation_id = buffer.allocation_id;
    mapping.handle = buffer.handle;
    CHORUS_RETURN_IF_ERROR(
        ipc_->Open(buffer.handle, &mapping.base).WithContext(StrCat("CUDA IPC: mapping rank ", peer_.rank, "'s buffer")));
    mappings_.push_back(mapping);
    ++counts_.maps;
  }
  *source = static_cast<const uint8_t*>(mappings_.back().base) + buffer.offset;
  return Status::Ok();
}

Status CudaIpcEndpoint::Pull(RecvOp* op) {
  const uint8_t* source = nullptr;
  CHORUS_RETURN_IF_ERROR(PeerSource(op->descriptor, &source));
  TransferRequest& user = *op->user;
  const ReceiveCombiner* combine = user.combine;
  if (combine == nullptr) return ipc_->Copy(user.buffer, source, user.bytes);
  if (Contains(combine->readable, ipc_->kind())) {
    combine->fn(combine->context, 0, source, user.bytes);
    return Status::Ok();
  }
  // A CPU combiner: through host memory, in pieces that never split an element.
  const size_t piece = std::min<size_t>(kBouncePieceBytes, user.bytes);
  op->bounce.resize(piece);
  for (size_t offset = 0; offset < user.bytes; offset += piece) {
    const size_t length = std::min(piece, user.bytes - offset);
    CHORUS_RETURN_IF_ERROR(ipc_->Copy(op->bounce.data(), source + offset, length));
    combine->fn(combine->context, offset, op->bounce.data(), length);
  }
  return Status::Ok();
}

Status CudaIpcEndpoint::PostInline(RecvOp* op) {
  TransferRequest& user = *op->user;
  TransferRequest& data = op->data_request;
  data = TransferRequest();
  data.bytes = user.bytes;
  data.tag = user.tag;
  if (user.combine != nullptr) {
    data.combine = user.combine;  // given only where the carrier combines; host pieces suit every combiner
    data.buffer = user.buffer;
  } else if (IsCpuAccessible(user.kind)) {
    data.buffer = user.buffer;
    data.memory = user.memory;
  } else if (carrier_->combine_on_receive()) {
    op->endpoint = this;
    op->copy_in.context = op;
    op->copy_in.fn = [](void* context, size_t offset, const void* incoming, size_t bytes) {
      auto* self = static_cast<RecvOp*>(context);
      if (!self->failure.ok()) return;
      self->failure = self->endpoint->ipc_->Copy(static_cast<uint8_t*>(self->user->buffer) + offset, incoming, bytes);
    };
    data.combine = &op->copy_in;
    data.buffer = user.buffer;
  } else {
    op->bounce.resize(user.bytes);
    op->bounced = true;
    data.buffer = op->bounce.data();
  }
  return carrier_->PostRecv(&data);
}

Status CudaIpcEndpoint::FinishLanded(RecvOp* op) {
  CHORUS_RETURN_IF_ERROR(op->failure);
  if (op->bounced) CHORUS_RETURN_IF_ERROR(ipc_->Copy(op->user->buffer, op->bounce.data(), op->user->bytes));
  op->user->done = true;
  return Status::Ok();
}

Status CudaIpcEndpoint::CheckSends() {
  if (sends_.empty()) return Status::Ok();
  const uint64_t finished = acks_->Finished(peer_.rank);
  for (size_t i = 0; i < sends_.size();) {
    SendOp* op = sends_[i];
    bool done = op->descriptor_request.done;
    if (op->descriptor.mode == PullMode::kInline) done = done && op->data_request.done;
    if (op->descriptor.mode == PullMode::kPull) done = done && finished >= op->descriptor.sequence;
    if (!done) {
      if (op->descriptor.mode == PullMode::kPull && peer_.pid != 0) {
        const auto now = std::chrono::steady_clock::now();
        if (now - op->checked >= kLivenessPeriod) {
          op->checked = now;
          if (shm::ProcessGone(peer_.pid)) {
            return Status(chorusRemoteError, StrCat("CUDA IPC: rank ", peer_.rank, " (pid ", peer_.pid,
                                                    ") exited before it pulled a message of ", op->user->bytes,
                                                    " bytes"));
          }
        }
      }
      ++i;
      continue;
    }
    op->user->done = true;
    sends_.erase(sends_.begin() + static_cast<std::ptrdiff_t>(i));
    send_ops_.Give(op);
  }
  return Status::Ok();
}

bool CudaIpcEndpoint::AwaitsAcknowledgement() const {
  return std::any_of(sends_.begin(), sends_.end(), [](const SendOp* op) { return op->descriptor.mode == PullMode::kPull; });
}

}  // namespace chorus
