#include "core/launch_binding.h"

#include <algorithm>
#include <tuple>

#include "core/reduction_scaling.h"

namespace chorus {
namespace {

constexpr uint64_t kPointToPointTag = 1ull << 63;

size_t RoundUp64(size_t bytes) { return (bytes + 63) / 64 * 64; }

uint8_t* Writable(const void* buffer) { return const_cast<uint8_t*>(static_cast<const uint8_t*>(buffer)); }

// The schedule of one send, receive or local copy, from kSend to kRecv.
Schedule OneStepSchedule(StepKind kind, int peer, size_t bytes, DataType dtype, const char* name) {
  Schedule schedule;
  schedule.algorithm = name;
  schedule.dtype = dtype;
  schedule.element_size = DataTypeSize(dtype);
  Step step;
  step.kind = kind;
  step.peer = peer;
  step.src = {BufferId::kSend, 0};
  step.dst = {BufferId::kRecv, 0};
  step.bytes = bytes;
  schedule.Add(step);
  return schedule;
}

// Bytes of `buffer` that `schedule`'s steps touch (from offset 0).
size_t ExtentOf(const Schedule& schedule, BufferId buffer) {
  size_t extent = 0;
  for (const Step& step : schedule.steps) {
    for (const BufferRange* range : {&step.src, &step.src2, &step.dst}) {
      if (range->buffer == buffer && step.bytes > 0) extent = std::max(extent, range->offset + step.bytes);
    }
  }
  return extent;
}

}  // namespace

LaunchBinding::LaunchBinding(int rank, int nranks, const LocalEngines& engines)
    : rank_(rank), engines_(engines), sends_to_(nranks, 0), recvs_from_(nranks, 0) {}

void LaunchBinding::RegisterWith(Transport* transport) {
  registrations_ = std::make_unique<RegistrationCache>(transport);
  registered_kinds_ = transport->capabilities().memory_kinds;
}

void LaunchBinding::Begin() {
  keep_.clear();
  p2p_schedules_.clear();
  scaled_inputs_.clear();
  bound_.clear();
  layouts_.clear();
  scratch_total_ = 0;
  self_sends_.clear();
  self_recvs_.clear();
}

Status LaunchBinding::AddCollective(const Operation& op, std::shared_ptr<const Schedule> schedule) {
  const CollectiveArgs& args = op.args;
  BoundSchedule b;
  b.schedule = schedule.get();
  b.send = Writable(op.send);
  b.recv = static_cast<uint8_t*>(op.recv);
  // A null buffer becomes private host memory in PlaceScratch.
  if (op.send != nullptr) b.send_kind = op.send_kind;
  if (op.recv != nullptr) b.recv_kind = op.recv_kind;
  b.tag = (++collective_sequence_ << 8) | static_cast<uint64_t>(args.coll);
  if (ScalesInput(op) && op.send != nullptr) {
    // Scale a private copy: the user's send buffer is const.
    size_t count = SendBufferBytes(args) / DataTypeSize(args.dtype);
    size_t bytes = count * DataTypeSize(args.dtype);
    std::unique_ptr<uint8_t[]> scaled(new uint8_t[bytes == 0 ? 1 : bytes]);
    CHORUS_RETURN_IF_ERROR(ScaledInputFrom(engines_, op.send_kind, op, scaled.get(), op.send, count));
    b.send = scaled.get();
    b.send_kind = MemoryKind::kHost;
    scaled_inputs_.push_back(std::move(scaled));
  }
  ScratchLayout layout;
  layout.scratch = scratch_total_;
  scratch_total_ += RoundUp64(schedule->scratch_bytes);
  layout.send = scratch_total_;
  if (b.send == nullptr) scratch_total_ += RoundUp64(SendBufferBytes(args));
  layout.recv = scratch_total_;
  if (b.recv == nullptr) scratch_total_ += RoundUp64(RecvBufferBytes(args));
  layouts_.push_back(layout);
  bound_.push_back(b);
  keep_.push_back(std::move(schedule));
  return Status::Ok();
}

void LaunchBinding::PlaceScratch() {
  uint8_t* scratch = scratch_total_ > 0 ? scratch_.Reserve(scratch_total_) : nullptr;
  for (size_t i = 0; i < layouts_.size(); ++i) {
    bound_[i].scratch = scratch + layouts_[i].scratch;
    if (bound_[i].send == nullptr) bound_[i].send = scratch + layouts_[i].send;
    if (bound_[i].recv == nullptr) bound_[i].recv = scratch + layouts_[i].recv;
  }
}

Status LaunchBinding::AddPointToPoint(const Operation* ops, size_t nops) {
  p2p_schedules_.reserve(nops);  // bound_[] points into it
  // Sends to oneself pair with receives from oneself of the same launch, in
  // order, and become local copies (NCCL allows them inside a group).
  for (const Operation* op = ops; op != ops + nops; ++op) {
    if (op->kind == Operation::Kind::kCollective || op->bytes == 0 || op->peer != rank_) continue;
    (op->kind == Operation::Kind::kSend ? self_sends_ : self_recvs_).push_back(op);
  }
  if (self_sends_.size() != self_recvs_.size()) {
    return InvalidUsage("rank ", rank_, ": ", self_sends_.size(), " send(s) to itself but ", self_recvs_.size(),
                        " receive(s) from itself in one launch; pair them inside a group");
  }
  for (size_t i = 0; i < self_sends_.size(); ++i) {
    if (self_sends_[i]->bytes != self_recvs_[i]->bytes) {
      return InvalidUsage("rank ", rank_, ": send to itself of ", self_sends_[i]->bytes,
                          " bytes meets a receive of ", self_recvs_[i]->bytes, " bytes");
    }
    p2p_schedules_.push_back(OneStepSchedule(StepKind::kCopy, -1, self_sends_[i]->bytes, chorusUint8, "self"));
    BoundSchedule b;
    b.schedule = &p2p_schedules_.back();
    b.send = Writable(self_sends_[i]->send);
    b.recv = static_cast<uint8_t*>(self_recvs_[i]->recv);
    b.send_kind = self_sends_[i]->send_kind;
    b.recv_kind = self_recvs_[i]->recv_kind;
    bound_.push_back(b);
  }

  for (const Operation* op = ops; op != ops + nops; ++op) {
    if (op->kind == Operation::Kind::kCollective || op->bytes == 0 || op->peer == rank_) continue;
    const bool sending = op->kind == Operation::Kind::kSend;
    p2p_schedules_.push_back(OneStepSchedule(sending ? StepKind::kSend : StepKind::kRecv, op->peer, op->bytes,
                                             op->dtype, sending ? "send" : "recv"));
    BoundSchedule b;
    b.schedule = &p2p_schedules_.back();
    b.send = Writable(op->send);
    b.recv = static_cast<uint8_t*>(op->recv);
    b.send_kind = op->send_kind;
    b.recv_kind = op->recv_kind;
    uint64_t sequence = sending ? sends_to_[op->peer]++ : recvs_from_[op->peer]++;
    b.tag = kPointToPointTag | sequence;
    bound_.push_back(b);
  }
  return Status::Ok();
}

void LaunchBinding::AddTagged(std::shared_ptr<const Schedule> schedule, const void* send, void* recv, uint64_t tag) {
  BoundSchedule b;
  b.schedule = schedule.get();
  b.send = Writable(send);
  b.recv = static_cast<uint8_t*>(recv);
  b.tag = tag;
  bound_.push_back(b);
  keep_.push_back(std::move(schedule));
}

Status LaunchBinding::RegisterBuffers(ExecutorOptions* options) {
  const bool user = user_ != nullptr && !user_->empty();
  if (registrations_ == nullptr && !user) return Status::Ok();
  leases_.clear();
  user_leases_.clear();
  bound_memory_.assign(bound_.size(), BoundMemory());
  for (size_t i = 0; i < bound_.size(); ++i) {
    const BoundSchedule& b = bound_[i];
    BoundMemory& memory = bound_memory_[i];
    for (auto [buffer, base, kind, handle] :
         {std::make_tuple(BufferId::kSend, b.send, b.send_kind, &memory.send),
          std::make_tuple(BufferId::kRecv, b.recv, b.recv_kind, &memory.recv),
          std::make_tuple(BufferId::kScratch, b.scratch, b.scratch_kind, &memory.scratch)}) {
      const size_t bytes = base != nullptr ? ExtentOf(*b.schedule, buffer) : 0;
      if (bytes == 0) continue;
      if (user) {
        std::shared_ptr<const UserRegistrations::Registration> registration = user_->Find(base, bytes);
        if (registration != nullptr) {
          *handle = registration->handle();
          user_leases_.push_back(std::move(registration));
          continue;
        }
      }
      // A kind the transport does not take is staged through host slots,
      // which carry no registration.
      if (registrations_ == nullptr || !Contains(registered_kinds_, kind)) continue;
      // Pinned memory is host memory to a transport (ibverbs registers
      // only kHost); a device kind it takes is registered as that kind.
      const MemoryKind registered = IsCpuAccessible(kind) ? MemoryKind::kHost : kind;
      RegistrationCache::Lease lease;
      Status status = registrations_->Acquire(base, bytes, registered, &lease);
      if (!status.ok()) {
        ReleaseBuffers();
        return status.WithContext(StrCat("rank ", rank_, ": registering ", bytes, " bytes"));
      }
      *handle = lease.handle();
      leases_.push_back(lease);
    }
  }
  options->memory = &bound_memory_;
  return Status::Ok();
}

void LaunchBinding::ReleaseBuffers() {
  user_leases_.clear();
  if (registrations_ == nullptr) return;
  for (RegistrationCache::Lease& lease : leases_) registrations_->Release(&lease);
  leases_.clear();
}

}  // namespace chorus
