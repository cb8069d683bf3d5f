// Point-to-point operations of the process group: send, recv, recv from
// any source, and the coalescing blocks of batch_isend_irecv. Each send is
// counted in the store (by a background thread) so that a receive from any
// source can tell which peers have sent it something it has not received.
#include "process_group_chorus.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>

#include "tensor_args.h"

namespace torch_chorus {
namespace {

// The store's count of point-to-point messages `src` has sent to `dst`.
std::string SentKey(int src, int dst) { return "chorus/sent/" + std::to_string(src) + "/" + std::to_string(dst); }

}  // namespace

c10::intrusive_ptr<ChorusWork> ProcessGroupChorus::Defer(bool is_send, void* data, size_t bytes, int peer,
                                                         c10d::OpType type, const char* title, std::string what,
                                                         std::vector<at::Tensor> outputs,
                                                         std::function<void()> finalize) {
  chorusEvent_t event = nullptr;
  const chorusResult_t made = chorusEventCreate(&event);
  TORCH_CHECK(made == chorusSuccess, "Chorus ", what, ": ", ChorusMessage(made, nullptr));
  auto work = c10::make_intrusive<ChorusWork>(rank_, type, title, comm_, event, std::move(outputs),
                                              std::move(finalize), std::move(what), completions_, /*issued=*/false);
  deferred_.push_back(Deferred{is_send, data, bytes, peer, work});
  return work;
}

void ProcessGroupChorus::startCoalescing() {
  std::lock_guard<std::mutex> lock(p2p_mutex_);
  TORCH_CHECK(!coalescing_.load(), "Chorus: a coalescing block is already open (they do not nest)");
  coalescing_ = true;
}

void ProcessGroupChorus::endCoalescing(std::vector<c10::intrusive_ptr<c10d::Work>>&) {
  std::vector<Deferred> ops;
  {
    std::lock_guard<std::mutex> lock(p2p_mutex_);
    TORCH_CHECK(coalescing_.load(), "Chorus: endCoalescing without startCoalescing");
    coalescing_ = false;
    ops.swap(deferred_);
  }
  if (ops.empty()) return;
  ++sequence_;
  chorusResult_t result = chorusGroupStart();
  const bool grouped = result == chorusSuccess;
  for (size_t i = 0; i < ops.size() && result == chorusSuccess; ++i) {
    const Deferred& op = ops[i];
    result = op.is_send ? chorusSend(op.data, op.bytes, chorusUint8, op.peer, comm_, stream_)
                        : chorusRecv(op.data, op.bytes, chorusUint8, op.peer, comm_, stream_);
  }
  if (grouped) {
    const chorusResult_t ended = chorusGroupEnd();
    if (result == chorusSuccess) result = ended;
  }
  std::string failure;
  if (result != chorusSuccess) {
    failure = "Chorus batch of " + std::to_string(ops.size()) + " sends and receives: " + ChorusMessage(result, comm_);
  }
  for (const Deferred& op : ops) {
    // Every work's event follows the whole group.
    const chorusResult_t recorded = failure.empty() ? chorusEventRecord(op.work->event(), stream_) : result;
    if (recorded == chorusSuccess) {
      op.work->Issued();
      if (op.is_send) Announce(op.peer);
    } else {
      op.work->NotIssued(std::make_exception_ptr(std::runtime_error(
          failure.empty() ? "Chorus: could not record an event: " + ChorusMessage(recorded, nullptr) : failure)));
    }
  }
  TORCH_CHECK(failure.empty(), failure);
}

void ProcessGroupChorus::Announce(int dst) {
  {
    std::lock_guard<std::mutex> lock(announce_mutex_);
    ++unannounced_[dst];
    if (!announcer_.joinable()) announcer_ = std::thread([this] { AnnounceLoop(); });
  }
  announce_cv_.notify_one();
}

void ProcessGroupChorus::AnnounceLoop() {
  for (;;) {
    std::map<int, int64_t> batch;
    {
      std::unique_lock<std::mutex> lock(announce_mutex_);
      announce_cv_.wait(lock, [&] { return announce_stopping_ || !unannounced_.empty(); });
      if (unannounced_.empty()) return;  // stopping and drained
      batch.swap(unannounced_);
    }
    for (const auto& entry : batch) {
      try {
        store_->add(SentKey(rank_, entry.first), entry.second);
      } catch (const std::exception& error) {
        if (!announce_warned_) {
          announce_warned_ = true;
          TORCH_WARN("Chorus: could not count a send to rank ", entry.first,
                     " in the store (a receive from any source there will not see it): ", error.what());
        }
      }
    }
  }
}

int64_t ProcessGroupChorus::SentByPeer(int src) {
  const std::string key = SentKey(src, rank_);
  if (!store_->check({key})) return 0;
  const std::vector<uint8_t> value = store_->get(key);
  return std::stoll(std::string(value.begin(), value.end()));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::send(std::vector<at::Tensor>& tensors, int dst_rank, int) {
  CheckSingle(tensors, "send");
  TORCH_CHECK(dst_rank >= 0 && dst_rank < size_, "Chorus send: destination ", dst_rank, " is out of range");
  const at::Tensor data = tensors[0].contiguous();
  void* buffer = data.data_ptr();
  const size_t bytes = Bytes(data);
  std::lock_guard<std::mutex> lock(p2p_mutex_);
  if (coalescing_.load()) {
    return Defer(true, buffer, bytes, dst_rank, c10d::OpType::SEND, "chorus:send", Describe("send", data), tensors,
                 [data] {});
  }
  auto work = Launch(
      c10d::OpType::SEND, "chorus:send", Describe("send", data),
      [&] { return chorusSend(buffer, bytes, chorusUint8, dst_rank, comm_, stream_); }, tensors, [data] {});
  Announce(dst_rank);
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::recv(std::vector<at::Tensor>& tensors, int src_rank, int) {
  CheckSingle(tensors, "recv");
  TORCH_CHECK(src_rank >= 0 && src_rank < size_, "Chorus recv: source ", src_rank, " is out of range");
  auto staged = std::make_shared<Staged>(tensors[0]);
  void* buffer = staged->buffer.data_ptr();
  const size_t bytes = Bytes(staged->buffer);
  std::lock_guard<std::mutex> lock(p2p_mutex_);
  auto work = coalescing_.load()
                  ? Defer(false, buffer, bytes, src_rank, c10d::OpType::RECV, "chorus:recv", Describe("recv", tensors[0]),
                          tensors, [staged] { staged->CopyBack(); })
                  : Launch(
                        c10d::OpType::RECV, "chorus:recv", Describe("recv", tensors[0]),
                        [&] { return chorusRecv(buffer, bytes, chorusUint8, src_rank, comm_, stream_); }, tensors,
                        [staged] { staged->CopyBack(); });
  ++received_[src_rank];
  work->set_source_rank(src_rank);
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::recvAnysource(std::vector<at::Tensor>& tensors, int) {
  CheckSingle(tensors, "recv from any source");
  TORCH_CHECK(!coalescing_.load(), "Chorus recv from any source: not inside a coalescing block (batch_isend_irecv)");
  TORCH_CHECK(size_ > 1, "Chorus recv from any source: rank ", rank_, " has no peer in a group of one");
  auto staged = std::make_shared<Staged>(tensors[0]);
  void* buffer = staged->buffer.data_ptr();
  const size_t bytes = Bytes(staged->buffer);
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  std::chrono::microseconds pause(50);
  for (;;) {
    // Peers from where the last scan stopped, so that no sender starves.
    for (int i = 0; i < size_; ++i) {
      const int src = (next_any_source_ + i) % size_;
      if (src == rank_) continue;
      const int64_t sent = SentByPeer(src);  // a store round trip: outside the lock
      std::lock_guard<std::mutex> lock(p2p_mutex_);
      if (sent <= received_[src]) continue;
      auto work = Launch(
          c10d::OpType::RECVANYSOURCE, "chorus:recvAnySource", Describe("recv from any source", tensors[0]),
          [&] { return chorusRecv(buffer, bytes, chorusUint8, src, comm_, stream_); }, tensors,
          [staged] { staged->CopyBack(); });
      ++received_[src];
      next_any_source_ = (src + 1) % size_;
      work->set_source_rank(src);
      return work;
    }
    TORCH_CHECK(std::chrono::steady_clock::now() < deadline, "Chorus recv from any source: timed out after ",
                timeout_.count(), " ms: no peer sent rank ", rank_, " a message it has not received");
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(10000));
  }
}

}  // namespace torch_chorus
