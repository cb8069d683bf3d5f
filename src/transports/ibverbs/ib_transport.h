// IbTransport: messages over InfiniBand / RoCE verbs, one RC queue pair per
// peer on one port of one device (ib_device.h). Each sender owns a ring of
// slots in a registered buffer on its peer (ib_slot_ring.h): a message is
// cut into chunks, each copied into a local staging slot (or, for a buffer
// registered with RegisterMemory, taken from it in place) and written with
// RDMA write with immediate into the next remote slot while the sender holds
// a credit; the receiver copies the chunk out (or hands it to a combiner)
// and returns credits in small control SENDs (ib_wire.h). Between buffers
// registered on both sides, a large message skips the slots: the receiver
// offers its buffer and the sender writes straight into it (ib_direct.h).
// RC keeps each direction in order, so messages match in posting order as
// the interface asks.
//
// The rendezvous address (ib_connection_blob.h) carries the QP numbers, LID,
// GID, PSN and MTU; Connect brings the QPs up and exchanges a hello over
// each. A ring is made by its receiver when its sender first needs it.
//
// Progress polls the completion queue; an idle Progress arms it and sleeps
// on the completion channel's fd (and a wakeup eventfd). A peer that closes
// sends a closing notice; a peer that dies is found by the RC retries of a
// probe sent while we wait on it (CHORUS_IB_TIMEOUT, CHORUS_IB_RETRY_CNT).
// Either fails Progress, naming the peer and the device, while something to
// or from it is pending.
//
// Threading: as UcxTransport (one mutex, released while sleeping).
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "transports/ibverbs/ib_connection_blob.h"
#include "transports/ibverbs/ib_device.h"
#include "transports/ibverbs/ib_slot_ring.h"
#include "transports/ibverbs/ib_wire.h"
#include "transports/socket/socket.h"
#include "transports/transport.h"

namespace chorus {

// The transport's own options (its CHORUS_IB_* variables) beside what every
// transport gets.
struct IbOptions : TransportOptions {
  std::string hca;             // CHORUS_IB_HCA
  int gid_index = -1;          // CHORUS_IB_GID_INDEX; -1: automatic
  uint32_t slot_bytes = 256 * 1024;  // CHORUS_IB_SLOT_BYTES
  uint32_t slots = 16;               // CHORUS_IB_SLOTS
  uint64_t direct_bytes = 64 * 1024; // CHORUS_IB_DIRECT_BYTES; 0: never direct
  int ack_timeout = 18;        // CHORUS_IB_TIMEOUT: 4.096 us * 2^value per retry
  int retry_count = 6;         // CHORUS_IB_RETRY_CNT (rxe retries 7 forever)
};

class TransportVars;
// The CHORUS_IB_* variables from `vars` (ib_descriptor.cc).
Status ReadIbOptions(const TransportVars& vars, IbOptions* options);

// Opens the device and creates a QP for every other rank; fails with "no
// RDMA device" where there is none.
Status CreateIbTransport(const IbOptions& options, std::unique_ptr<Transport>* transport);

class IbTransport : public Transport {
 public:
  ~IbTransport() override;

  const char* name() const override { return "ibverbs"; }
  TransportCapabilities capabilities() const override;
  std::string LocalAddress() const override { return local_address_; }
  Status Connect(const std::vector<std::string>& addresses, Deadline deadline) override;
  Endpoint* endpoint(int peer) override;
  Status Progress(int timeout_ms) override;
  void Wakeup() override;
  // The wait on several transports (transport.h): the fd is an epoll set of
  // the completion channel (armed with ibv_req_notify_cq) and the Wakeup
  // eventfd; at most kProbeIntervalMs, to probe a silent peer in time.
  Status ArmWait(bool look_only, WaitArm* arm) override;
  void DisarmWait() override;
  void Shutdown() override;
  void ShutdownWithNotice(const CloseNotice& notice) override;
  bool ReceivedNotice(CloseNotice* notice) const override;
  // ibv_reg_mr of host memory; a send whose buffer lies in a registration
  // is written from it in place (no staging copy).
  Status RegisterMemory(void* ptr, size_t bytes, MemoryKind kind, MemoryHandle* handle) override;
  void DeregisterMemory(MemoryHandle handle) override;

  // Messages moved straight between registered buffers (ib_direct.h).
  struct DirectCounts {
    uint64_t sent = 0;
    uint64_t received = 0;
  };
  DirectCounts direct_counts();
  // Peers with a receive ring on this rank, and peers we have staging
  // slots for (rings are made on first use).
  struct RingCounts {
    size_t rings = 0;
    size_t staging = 0;
  };
  RingCounts ring_counts();

 private:
  friend Status CreateIbTransport(const IbOptions&, std::unique_ptr<Transport>*);
  class IbEndpoint;
  struct Peer;
  struct MemoryRegion;

  explicit IbTransport(const IbOptions& options);
  Status Init();
  Status ToInit(Peer* peer);
  // Posts the receives and brings the QP to RTR and RTS.
  Status BringUp(Peer* peer, const ib::ConnectionBlob& remote);
  Status PostHello(Peer* peer);
  // A QP whose hello failed (the peer was not up yet): RESET, a new epoch,
  // up again, the hello again.
  Status RestartQp(Peer* peer, const ib::ConnectionBlob& remote);
  Status Post(int peer, TransferRequest* request, bool is_send);
  // Polls the CQ until empty (bounded), then moves every peer's queues.
  Status Drive(bool* progressed);
  int PollCompletions(bool* progressed, Status* status);
  Status HandleCompletion(const ibv_wc& wc, bool* progressed);
  Status HandleControl(Peer* peer, const ib::ControlMessage& message);
  Status Advance(Peer* peer, bool* progressed);
  Status ConsumeArrived(Peer* peer, bool* progressed);
  Status PushSends(Peer* peer, bool* progressed);
  // Decides how `request` (at the head, nothing sent) goes: by direct write
  // when the receiver offered its buffer and ours is registered; `*wait`
  // when it could and the receiver's answer is still to come (announced).
  Status ChooseDirect(Peer* peer, TransferRequest* request, bool* wait);
  // Whether receives of this size are answered (ib_direct.h).
  bool Answered(const TransferRequest* request) const;
  // The offer or decline for the receive numbered `number`.
  ib::ControlMessage Answer(const TransferRequest* request, uint64_t number) const;
  // Posts the next direct write of the head message.
  Status PushDirect(Peer* peer, TransferRequest* request);
  // Writes the next slot of the peer's ring (taking a credit): `header`
  // completed with the sequence and message number, then `chunk_bytes` of
  // `payload`, in place from `payload_mr` when given, else through staging.
  Status WriteSlot(Peer* peer, ib::SlotHeader header, const uint8_t* payload, const ibv_mr* payload_mr);
  // Answers the posted receives of the direct size, and an owed decline.
  void OfferReceives(Peer* peer);
  // The registration a receive may be written into directly (of the
  // answered size, not reduced on arrival, registered whole), or null.
  const ibv_mr* DirectRegion(const TransferRequest* request) const;
  void PopSend(Peer* peer);
  void PopReceive(Peer* peer);
  bool PostControl(Peer* peer, const ib::ControlMessage& message);
  Status PostReceive(Peer* peer, uint32_t index);
  // A zeroed, page-aligned, registered region of `bytes`.
  Status NewRegion(size_t bytes, int access, const char* what, std::unique_ptr<MemoryRegion>* region);
  // Whether our ring on `peer` is known; else asks for it once (making our
  // staging slots for it) and says no until it answers.
  bool RingReady(Peer* peer);
  // Makes `peer`'s ring on this rank (kRingRequest) and answers.
  Status MakeRing(Peer* peer);
  Status CheckPeers();
  Status Sleep(std::unique_lock<std::mutex>& lock, int timeout_ms);
  // Requests the next completion event; *found: completions came since the
  // last poll (they raise no event), so do not sleep. Holds mutex_.
  Status ArmCompletionEvent(bool* found);
  // Takes the completion channel's events, acknowledged in batches. Holds mutex_.
  void TakeCompletionEvents();
  Status Fail(Status status);
  // Tells every live peer we close (with a notice, if any), lets go of
  // every request and stops the QPs. Holds mutex_.
  void Teardown();
  std::string Label(int rank) const;

  IbOptions options_;
  ib::Device device_;
  ibv_comp_channel* channel_ = nullptr;
  ibv_cq* cq_ = nullptr;
  int unacked_events_ = 0;
  Socket wakeup_;  // eventfd
  Socket wait_set_;  // epoll set of the completion channel and wakeup_, ArmWait's fd
  uint32_t psn_ = 0;
  uint32_t max_send_wr_ = 0;
  uint32_t max_recv_wr_ = 0;
  uint64_t direct_piece_bytes_ = 0;  // one RDMA write's most (the port's max_msg_sz, 1 GiB at most)
  DirectCounts direct_counts_;
  std::string local_address_;
  std::vector<std::unique_ptr<Peer>> peers_;  // by rank; null for self
  std::unique_ptr<MemoryRegion> controls_;  // every routed peer's control buffers
  bool connected_ = false;
  Status error_;
  std::mutex mutex_;
  std::atomic<bool> shut_down_{false};
  bool torn_down_ = false;
  CloseNotice outgoing_notice_;  // reason 0: none
  std::atomic<uint64_t> received_notice_{0};
};

}  // namespace chorus
