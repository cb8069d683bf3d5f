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
  // work counts as completed. `outputs` become the future's value.
  ChorusWork(int rank, c10d::OpType type, const char* profiling_title, chorusComm_t comm, chorusEvent_t event,
             std::vector<at::Tensor> outputs, std::function<void()> finalize, std::string what,
             std::shared_ptr<CompletionQueue> completions);
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

 private:
  // Runs once: copy-back on success, exception on failure, then the future.
  void Finish(chorusResult_t result);

  chorusComm_t comm_;
  chorusEvent_t event_;
  std::vector<at::Tensor> outputs_;
  std::function<void()> finalize_;
  std::string what_;  // "allreduce of 1024 float32 elements", for messages
  int source_rank_ = -1;
  std::once_flag finished_;
  std::shared_ptr<CompletionQueue> completions_;
  std::once_flag watched_;  // joined the completion queue
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

}  // namespace torch_chorus
