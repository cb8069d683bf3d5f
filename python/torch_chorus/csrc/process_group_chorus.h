// ProcessGroupChorus: the torch.distributed backend "chorus". Every
// operation validates its tensors, stages the ones Chorus cannot use in
// place (non-contiguous, lists that must be one buffer), enqueues its Chorus
// calls on the group's host stream, records an event after them and returns
// a ChorusWork. Works whose futures are asked for (DDP's reducer, comm
// hooks) join a completion queue, so that they complete without anyone
// waiting; the others finish on the thread that waits on them.
//
// Point-to-point messages between two ranks are received in the order they
// were sent (Chorus matches by peer and issue order; tags are not used for
// matching). A receive from any source learns who sent through the store
// the group met in: every send is counted there, off the caller's path, per
// (sender, receiver); the receiver takes the first peer whose count exceeds
// the receives it has already issued from that peer, then receives from it.
#pragma once

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <tuple>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <chorus/chorus.h>

#include "chorus_work.h"
#include "completion_queue.h"

namespace torch_chorus {

struct ChorusOptions {
  std::chrono::milliseconds timeout{std::chrono::minutes(30)};
  std::string algo;  // like CHORUS_ALGO; empty: the environment, then the tuner
};

class ProcessGroupChorus : public c10d::ProcessGroup {
 public:
  // Rendezvous through `store`: rank 0 makes a Chorus unique id and sets it,
  // the others get it. Collective over the group; bounded by the timeout.
  ProcessGroupChorus(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, ChorusOptions options);
  ~ProcessGroupChorus() override;

  const std::string getBackendName() const override { return "chorus"; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts = c10d::BroadcastOptions()) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts = c10d::AllreduceOptions()) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors,
      const c10d::AllreduceCoalescedOptions& opts = c10d::AllreduceCoalescedOptions()) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts = c10d::ReduceOptions()) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(
      std::vector<std::vector<at::Tensor>>& output_lists, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts = c10d::GatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts = c10d::ScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(
      std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
      const c10d::ReduceScatterOptions& opts = c10d::ReduceScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input,
      const c10d::ReduceScatterOptions& opts = c10d::ReduceScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_split_sizes,
                                               std::vector<int64_t>& input_split_sizes,
                                               const c10d::AllToAllOptions& opts = c10d::AllToAllOptions()) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts = c10d::AllToAllOptions()) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst_rank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src_rank, int tag) override;
  // Waits in the call (up to the group's timeout) until some peer has sent
  // to this rank, then receives from that peer; the work's sourceRank()
  // names it.
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts = c10d::BarrierOptions()) override;

  // A coalescing block (batch_isend_irecv): its sends and receives are
  // issued together when it ends, as one Chorus group, so that they make
  // progress together whatever their order (a receive issued alone holds
  // the communicator until its message arrives). Only send and recv may be
  // called inside; their works wait for the block's end.
  void startCoalescing() override;

  // Gloo's monitored barrier, through the store the group met in (so that
  // the group stays usable when it fails): every other rank reports to rank
  // 0 and waits for its release; rank 0 names the first rank (or, with
  // wait_all_ranks, every rank) that did not arrive within the timeout.
  // torch.distributed.monitored_barrier() itself accepts only gloo groups in
  // torch 1.13; ProcessGroup.monitored_barrier() reaches this.
  void monitoredBarrier(const c10d::BarrierOptions& opts, bool wait_all_ranks = false) override;
  void endCoalescing(std::vector<c10::intrusive_ptr<c10d::Work>>& reqs) override;

  void setSequenceNumberForGroup() override {}
  uint64_t getSequenceNumberForGroup() override { return sequence_.load(); }

  // Chorus's explicit non-exact collectives (docs/lossy.md), for DDP hooks.
  // `wire`: a chorusCompression_t; float32 tensors only. `key` names the
  // error-feedback state (DDP: the bucket index): one per key and wire.
  c10::intrusive_ptr<c10d::Work> AllReduceCompressed(at::Tensor& tensor, int wire, int64_t key);
  // One GossipGraD step: tensor = (tensor + partner's tensor) / 2.
  c10::intrusive_ptr<c10d::Work> Gossip(at::Tensor& tensor, bool rotate, uint64_t seed);

  chorusComm_t comm() const { return comm_; }

 private:
  // Issues a launch: `issue` makes the Chorus calls on stream_ (returning
  // the first failing result), then an event is recorded and a work made.
  c10::intrusive_ptr<ChorusWork> Launch(c10d::OpType type, const char* title, std::string what,
                                        const std::function<chorusResult_t()>& issue, std::vector<at::Tensor> outputs,
                                        std::function<void()> finalize);
  // The work of a send or recv inside a coalescing block (p2p_mutex_ held).
  c10::intrusive_ptr<ChorusWork> Defer(bool is_send, void* data, size_t bytes, int peer, c10d::OpType type,
                                       const char* title, std::string what, std::vector<at::Tensor> outputs,
                                       std::function<void()> finalize);
  // Counts a send to `dst` in the store (by the announcer thread).
  void Announce(int dst);
  void AnnounceLoop();
  // The store's count of messages `src` has sent to this rank.
  int64_t SentByPeer(int src);
  // Whether `key` appeared in the store before `deadline`.
  bool AwaitKey(const std::string& key, std::chrono::steady_clock::time_point deadline);

  c10::intrusive_ptr<c10d::Store> store_;
  std::chrono::milliseconds timeout_;
  chorusComm_t comm_ = nullptr;
  chorusStream_t stream_ = nullptr;
  std::atomic<uint64_t> sequence_{0};
  uint64_t monitored_barriers_ = 0;
  chorusGossipState_t gossip_ = CHORUS_GOSSIP_STATE_INITIALIZER;
  // (key, wire, count) -> state; destroyed after the stream drained.
  std::map<std::tuple<int64_t, int, size_t>, chorusCompressState_t> compress_states_;

  std::shared_ptr<CompletionQueue> completions_ = std::make_shared<CompletionQueue>();

  // Receives issued from each peer (specific or any source); any-source
  // resolution and issuing happen under p2p_mutex_.
  std::mutex p2p_mutex_;
  std::vector<int64_t> received_;
  int next_any_source_ = 0;  // where the next any-source scan starts (fairness)
  // The open coalescing block's sends and receives, in call order.
  struct Deferred {
    bool is_send;
    void* data;
    size_t bytes;
    int peer;
    c10::intrusive_ptr<ChorusWork> work;  // keeps the buffers alive
  };
  std::atomic<bool> coalescing_{false};
  std::vector<Deferred> deferred_;

  // Sends not yet counted in the store, by destination; the announcer
  // thread starts with the first send and drains before it stops.
  std::mutex announce_mutex_;
  std::condition_variable announce_cv_;
  std::map<int, int64_t> unannounced_;
  bool announce_stopping_ = false;
  bool announce_warned_ = false;
  std::thread announcer_;
};

}  // namespace torch_chorus
