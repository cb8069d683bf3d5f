// One peer of the CUDA IPC overlay. Calls on host memory pass straight to
// the carrier. In a device call (TransferRequest::call_kind is the device's
// kind) every message is preceded on the carrier by a PullDescriptor; a
// message in device memory then never crosses the carrier: the receiver
// maps the sender's allocation (kept mapped for later calls), copies or
// reduces straight out of it on the GPU, and acknowledges through PullAcks,
// which completes the send. Host memory in a device call (scratch, staging)
// follows its descriptor inline.
//
// Receives of a device call are handled one at a time in posting order: what
// the carrier must receive next (a descriptor, or inline bytes) is known only
// once the previous descriptor arrived. Sends never wait.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "transports/cuda_ipc/device_ipc.h"
#include "transports/cuda_ipc/pull_acks.h"
#include "transports/cuda_ipc/pull_descriptor.h"
#include "transports/transport.h"

namespace chorus {

class CudaIpcEndpoint final : public Endpoint {
 public:
  struct Peer {
    int rank = -1;
    bool same_process = false;  // pointers are used as they are
    pid_t pid = 0;              // checked while an acknowledgement is late
  };
  CudaIpcEndpoint(const Peer& peer, Endpoint* carrier, DeviceIpc* ipc, PullAcks* acks);
  ~CudaIpcEndpoint() override;
  CudaIpcEndpoint(const CudaIpcEndpoint&) = delete;
  CudaIpcEndpoint& operator=(const CudaIpcEndpoint&) = delete;

  int peer() const override { return peer_.rank; }
  Status PostSend(TransferRequest* request) override;
  Status PostRecv(TransferRequest* request) override;
  bool combine_on_receive() const override { return carrier_->combine_on_receive(); }
  MemoryKindMask memory_kinds() const override { return kCpuAccessibleKinds | KindBit(ipc_->kind()); }

  // Acts on what the carrier delivered (pulls, inline receives posted) and
  // marks finished requests done.
  Status Progress();
  // Some send waits for the peer's acknowledgement.
  bool AwaitsAcknowledgement() const;
  // Unmaps every allocation of the peer mapped so far; no request is
  // touched afterwards.
  void Shutdown();

  struct Counts {
    uint64_t pulls = 0;          // messages copied or reduced from the peer's device memory
    uint64_t inline_sends = 0;   // device-call messages whose bytes crossed the carrier
    uint64_t maps = 0;           // allocations of the peer mapped (Open)
  };
  const Counts& counts() const { return counts_; }

 private:
  struct SendOp;
  struct RecvOp;

  bool DeviceCall(const TransferRequest& request) const { return request.call_kind == ipc_->kind(); }
  Status PumpReceives();
  Status OnDescriptor(RecvOp* op, bool* landing);
  Status Pull(RecvOp* op);
  Status PostInline(RecvOp* op);
  Status FinishLanded(RecvOp* op);
  Status CheckSends();
  Status PeerSource(const PullDescriptor& descriptor, const uint8_t** source);
  Status StageForInline(SendOp* op);


  Peer peer_;
  Endpoint* carrier_;
  DeviceIpc* ipc_;
  PullAcks* acks_;
  bool shut_down_ = false;
  uint64_t pull_sequence_ = 0;  // pulled sends posted to this peer

  std::deque<SendOp*> sends_;     // posted, not done, in posting order
  std::deque<RecvOp*> receives_;  // posted, descriptor not yet acted on
  std::deque<RecvOp*> landing_;   // inline bytes posted on the carrier
  // Every op ever made (a warm call allocates none), and the idle ones.
  template <typename Op>
  class Pool {
   public:
    Op* Take() {
      if (idle_.empty()) {
        all_.push_back(std::make_unique<Op>());
        return all_.back().get();
      }
      Op* op = idle_.back();
      idle_.pop_back();
      return op;
    }
    void Give(Op* op) { idle_.push_back(op); }

   private:
    std::vector<std::unique_ptr<Op>> all_;
    std::vector<Op*> idle_;
  };
  Pool<SendOp> send_ops_;
  Pool<RecvOp> recv_ops_;

  struct Mapping {
    uint64_t allocation_id = 0;
    IpcHandle handle;
    void* base = nullptr;
  };
  std::vector<Mapping> mappings_;  // most recently used last

  Counts counts_;
};

}  // namespace chorus
