// ChorusWork: one asynchronous operation of the process group. It completes
// when the event recorded after its Chorus calls does: then its staged
// outputs are copied back (non-contiguous tensors, flattened lists), and its
// future is marked, exactly once, by whichever comes first: the caller's
// wait() or isCompleted(), or the group's completion queue, which a work
// joins when its future is first asked for.
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <chorus/chorus.h>

#include "completion_queue.h"

namespace torch_chorus {

class ChorusWork : public c10d::Work {
 public:
  // `event` is owned from here on. `finalize` runs after success, before the
  // work counts as completed. `outputs` become the future's value. A work
  // made before its operation is issued (a send or recv of a coalescing
  // block, issued when the block ends) starts with `issued` false.
  ChorusWork(int rank, c10d::OpType type, const char* profiling_title, chorusComm_t comm, chorusEvent_t event,
             std::vector<at::Tensor> outputs, std::function<void()> finalize, std::string what,
             std::shared_ptr<CompletionQueue> completions, bool issued = true);
  ~ChorusWork() override;

  bool isCompleted() override;
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  std::vector<at::Tensor> result() override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  void synchronize() override {}
  // The peer a receive takes its message from (recv from any source tells
  // the caller who sent); other works throw, as torch's Work does.
  int sourceRank() const override;
  void set_source_rank(int rank) { source_rank_ = rank; }

  // Blocks until the operation ended, then completes the work.
  void CompleteBlocking();

  chorusEvent_t event() const { return event_; }
  // For a work made before its operation was issued: the event now follows
  // the operation; or the operation could not be issued, and the work fails.
  void Issued();
  void NotIssued(std::exception_ptr error);

 private:
  // Runs once: copy-back on success, exception on failure, then the future.
  void Finish(chorusResult_t result);
  void Settle(std::exception_ptr error);  // Finish's last step
  // Until Issued() or NotIssued(); false if never issued.
  bool WaitIssued();

  chorusComm_t comm_;
  chorusEvent_t event_;
  std::vector<at::Tensor> outputs_;
  std::function<void()> finalize_;
  std::string what_;  // "allreduce of 1024 float32 elements", for messages
  int source_rank_ = -1;
  std::once_flag finished_;
  std::mutex issue_mutex_;
  std::condition_variable issue_cv_;
  bool issued_;
  bool abandoned_ = false;  // NotIssued()
  std::shared_ptr<CompletionQueue> completions_;
  std::once_flag watched_;  // joined the completion queue
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

}  // namespace torch_chorus
