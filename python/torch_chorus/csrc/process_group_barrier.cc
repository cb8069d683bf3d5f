// Barriers: barrier() is a one-byte allreduce on the stream; monitoredBarrier
// meets in the store, as gloo's does, so that rank 0 can name the ranks
// that never arrived.
#include "process_group_chorus.h"

#include <c10/util/Exception.h>

#include <string>
#include <thread>
#include <vector>

namespace torch_chorus {

bool ProcessGroupChorus::AwaitKey(const std::string& key, std::chrono::steady_clock::time_point deadline) {
  std::chrono::microseconds pause(100);
  for (;;) {
    if (store_->check({key})) return true;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(pause, deadline - now));
    pause = std::min(pause * 2, std::chrono::microseconds(10000));
  }
}

void ProcessGroupChorus::monitoredBarrier(const c10d::BarrierOptions& opts, bool wait_all_ranks) {
  const std::chrono::milliseconds timeout = opts.timeout == c10d::kUnsetTimeout ? timeout_ : opts.timeout;
  const auto start = std::chrono::steady_clock::now();
  const std::string round = "chorus/monitored_barrier/" + std::to_string(++monitored_barriers_) + "/";
  if (rank_ != 0) {
    store_->set(round + "arrived/" + std::to_string(rank_), std::vector<uint8_t>{1});
    TORCH_CHECK(AwaitKey(round + "released", start + timeout), "Rank ", rank_,
                " successfully reached monitoredBarrier, but received errors while waiting for send/recv from rank 0"
                " (no release within ", timeout.count(), " ms). Please check rank 0 logs for faulty rank.");
    return;
  }
  std::vector<int> arrived, missing;
  for (int r = 1; r < size_; ++r) {
    // As gloo: one deadline for all ranks, or with wait_all_ranks the whole
    // timeout for each, so that every missing rank gets named.
    const auto deadline = (wait_all_ranks ? std::chrono::steady_clock::now() : start) + timeout;
    if (!wait_all_ranks && std::chrono::steady_clock::now() > deadline) {
      std::string done;
      for (int a : arrived) done += (done.empty() ? "" : ", ") + std::to_string(a);
      TORCH_CHECK(false, "Rank 0 timed out in monitoredBarrier after ", timeout.count(), " ms. Ranks that arrived: [",
                  done, "]; rank ", r, " and later were not checked.");
    }
    if (AwaitKey(round + "arrived/" + std::to_string(r), deadline)) {
      arrived.push_back(r);
      continue;
    }
    TORCH_CHECK(wait_all_ranks, "[Rank 0]: Rank ", r, " failed to pass monitoredBarrier in ", timeout.count(), " ms");
    missing.push_back(r);
  }
  if (!missing.empty()) {
    std::string ranks;
    for (int m : missing) ranks += (ranks.empty() ? "" : ", ") + std::to_string(m);
    TORCH_CHECK(false, "[Rank 0]: Ranks ", ranks, " failed to pass monitoredBarrier in ", timeout.count(), " ms");
  }
  store_->set(round + "released", std::vector<uint8_t>{1});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupChorus::barrier(const c10d::BarrierOptions&) {
  // An allreduce of one byte, after everything already issued on the stream.
  at::Tensor token = at::zeros({1}, at::kByte);
  void* data = token.data_ptr();
  return Launch(
      c10d::OpType::BARRIER, "chorus:barrier", "barrier",
      [&] { return chorusAllReduce(data, data, 1, chorusUint8, chorusMax, comm_, stream_); }, {}, [token] {});
}

}  // namespace torch_chorus
