// ShmTransport: messages between ranks of one host (processes or threads of
// one process) through POSIX shared memory.
//
// Each rank creates one segment holding an inbound single-producer/single-
// consumer ring per sender (see shm_layout.h). Small messages are copied
// through the ring; messages of kSingleCopyThreshold bytes or more are
// pulled by the receiver straight from the sender's buffer between threads
// (memcpy); between processes, from blocks of the sender's shared heap
// (base/shared_heap.h: chorusMemAlloc, large malloc blocks under
// libchorus_mpi.so), which the receiver mapped at Connect, or from any buffer
// with process_vm_readv when ShmTuning::pull_from_processes is set and the
// receiver proved at Connect that it can; else they are chunked through the
// ring too.
//
// Set-up is authenticated both ways with the communicator secret, and each
// segment's name is unlinked as soon as all peers mapped it, so nothing is
// left in /dev/shm even when a process is killed later; a rank whose set-up
// fails removes the segments its dead peers left (shm_names.h). Segment
// pages are reserved at creation: a full /dev/shm is a clear error.
//
// Every endpoint combines on receipt (TransferRequest::combine): from the
// ring record, straight from the sender's buffer between threads, or piece
// by piece through a bounce buffer when pulling from another process.
//
// Waiting (Progress with a timeout) spins briefly, then yields, then sleeps
// on a futex word in our own segment that peers bump when they give us
// work. When the ranks of this host outnumber the CPUs they may run on
// (decided at Connect from the affinity masks in the segments,
// shm_wait_policy.h), it never spins and an idle Progress(0) yields. Peers that shut down are seen through a flag in their segment;
// peers that die, by polling their pid every few milliseconds while we wait
// on them.
//
// Threading: PostSend/PostRecv/Progress from one thread at a time; Wakeup
// and Shutdown from any thread.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "transports/shm/shm_board.h"
#include "transports/shm/shm_channel.h"
#include "transports/shm/shm_layout.h"
#include "transports/shm/shm_segment.h"
#include "transports/shm/shm_wait_policy.h"
#include "transports/socket/socket.h"
#include "transports/transport.h"

namespace chorus {

// Which wait policy (shm_wait_policy.h): decided at Connect, or forced.
enum class ShmWaitMode { kAuto, kDedicatedCores, kSharedCores };

// Knobs beyond TransportOptions, mainly for tests.
struct ShmTuning {
  bool single_copy = true;          // false: every message is copied through the ring
  bool cma_within_process = false;  // use process_vm_readv even between threads of one process
  // Pull large messages from peers in other processes with process_vm_readv.
  // Off: they come through the ring, which measured faster on the project's
  // VM (the kernel copy pins pages; two user-space copies on two cores, or
  // one copy and a combine from the ring, are cheaper; docs/design-notes.md).
  bool pull_from_processes = false;
  // Pull large messages from blocks of a peer process's shared heap
  // (base/shared_heap.h), mapped here: one copy, as between threads. The
  // heap is published in our segment and peers' heaps are mapped at Connect.
  bool pull_from_heap = true;
  // Per sender; multiple of 64, >= 2 records. 0: shm::AutoRingBytes(nranks).
  // The registry sets it from CHORUS_SHM_RING_BYTES.
  size_t ring_bytes = 0;
  // Messages this large are pulled single-copy when the receiver can.
  size_t single_copy_min_bytes = shm::kSingleCopyThreshold;
  // Combining receives pulled from another process (pull_from_processes)
  // are read in pieces of this size (a multiple of 64) into a bounce buffer
  // and combined from there.
  size_t combine_piece_bytes = shm::kDefaultCombinePieceBytes;
  ShmWaitMode wait_mode = ShmWaitMode::kAuto;
  // Tests only: runs each time a waiting Progress has announced that it
  // sleeps, just before its last look for work (so a test can deliver a
  // message exactly there, the window a peer's wake-up can race with).
  std::function<void()> before_last_look;
};

struct TransportDescriptor;
// The registry's entry for shared memory (transports/registry.cc).
TransportDescriptor ShmTransportDescriptor();

// Creates this rank's segment; LocalAddress() names it.
Status CreateShmTransport(const TransportOptions& options, std::unique_ptr<Transport>* transport,
                          const ShmTuning& tuning = ShmTuning());

class ShmTransport : public Transport {
 public:
  ~ShmTransport() override;

  const char* name() const override { return "shm"; }
  TransportCapabilities capabilities() const override;
  std::string LocalAddress() const override { return local_address_; }
  // addresses[i] empty: rank i is not on this host (no endpoint).
  Status Connect(const std::vector<std::string>& addresses, Deadline deadline) override;
  Endpoint* endpoint(int peer) override;
  Status Progress(int timeout_ms) override;
  void Wakeup() override;
  // The wait on several transports (transport.h): the fd is this segment's
  // wake socket (shm_wake_socket.h), opened at the first call.
  Status ArmWait(bool look_only, WaitArm* arm) override;
  void DisarmWait() override;
  void Shutdown() override;
  // Writes the notice into every peer's segment (shm_layout.h), then shuts
  // down; any thread may call it.
  void ShutdownWithNotice(const CloseNotice& notice) override;
  bool ReceivedNotice(CloseNotice* notice) const override;

  // Messages received so far, by path.
  shm::ShmStats stats() const { return stats_; }
  // How this rank receives large messages from `peer` (after Connect).
  shm::PullMethod pull_method(int peer) const;
  // Whether waits yield instead of spinning (after Connect).
  bool shares_cores() const { return wait_policy_.yield_when_idle; }
  // The board of all ranks (shm_board.h) when every rank of the
  // communicator is connected here (one host, all over shm), else null.
  shm::ShmBoard* SharedBoard() const override { return board_.get(); }

 private:
  friend Status CreateShmTransport(const TransportOptions&, std::unique_ptr<Transport>*, const ShmTuning&);
  class ShmEndpoint;
  struct Peer;
  struct PeerAddress;
  using Clock = std::chrono::steady_clock;

  ShmTransport(const TransportOptions& options, const ShmTuning& tuning);
  Status CreateSegment();
  // Connect, step by step (shm_connect.cc).
  Status ConnectPeers(const std::vector<std::string>& addresses, Deadline deadline);
  Status MapPeer(int rank, const std::string& address, std::unique_ptr<Peer>* peer);
  shm::PullMethod ProbePull(const Peer& peer) const;
  Status AwaitAttachments(int expected, const std::vector<std::unique_ptr<Peer>>& peers, Deadline deadline);
  Status VerifySenders(const std::vector<std::unique_ptr<Peer>>& peers) const;
  shm::WaitPolicy ChooseWaitPolicy(const std::vector<std::unique_ptr<Peer>>& peers) const;
  std::unique_ptr<shm::ShmBoard> MakeBoard();

  Status Post(int peer, TransferRequest* request, bool is_send);
  Status PumpAll(bool* progressed);
  Status PumpPeer(Peer& peer, bool* progressed);
  Status CheckPeers(bool force, bool* progressed);
  Status Wait(int timeout_ms);
  Status SleepOnce(int64_t timeout_us, bool* progressed);
  Status Fail(Status status);
  shm::SegmentHeader* header() const { return static_cast<shm::SegmentHeader*>(segment_->data()); }

  TransportOptions options_;
  const SharedHeap* heap_ = nullptr;  // ours, published in our segment (null: none)
  ShmTuning tuning_;
  pid_t pid_;
  std::string host_;
  std::unique_ptr<shm::ShmSegment> segment_;
  std::string local_address_;
  std::vector<std::unique_ptr<Peer>> peers_;  // by rank; null for self and other hosts
  std::vector<Peer*> connected_peers_;
  bool connected_ = false;
  shm::ShmStats stats_;
  // Combining CMA pulls land here; allocated at Connect when some peer needs it.
  struct alignas(shm::kCacheLine) CacheLine {
    uint8_t bytes[shm::kCacheLine];
  };
  std::vector<CacheLine> bounce_storage_;
  shm::BounceBuffer bounce_;
  Clock::time_point next_liveness_check_ = {};
  shm::WaitPolicy wait_policy_ = shm::kDedicatedCoresPolicy;
  uint32_t idle_polls_ = 0;  // CheckPeers calls, to read the clock only now and then
  // Waits in a row that spun in vain and ended at their first yield: the
  // peer runs on our core (unpinned threads the scheduler stacked there,
  // e.g. two ranks' stream workers), so the next wait yields at once.
  uint32_t ended_at_first_yield_ = 0;
  Status error_;
  std::mutex shutdown_mutex_;  // Shutdown vs. Connect publishing the peers
  std::atomic<bool> shut_down_{false};
  std::atomic<bool> wakeup_requested_{false};
  std::unique_ptr<shm::ShmBoard> board_;
  Socket wake_socket_;  // ArmWait's fd; invalid until the first ArmWait (or if refused)
  bool wake_socket_opened_ = false;
};

}  // namespace chorus
