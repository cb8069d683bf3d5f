#include "chorus_work.h"

#include <stdexcept>
#include <thread>

namespace torch_chorus {

ChorusWork::ChorusWork(int rank, c10d::OpType type, const char* profiling_title, chorusComm_t comm,
                       chorusEvent_t event, std::vector<at::Tensor> outputs, std::function<void()> finalize,
                       std::string what, std::shared_ptr<CompletionQueue> completions, bool issued)
    : c10d::Work(rank, type, profiling_title),
      comm_(comm),
      event_(event),
      outputs_(std::move(outputs)),
      finalize_(std::move(finalize)),
      what_(std::move(what)),
      issued_(issued),
      completions_(std::move(completions)),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {}

ChorusWork::~ChorusWork() { (void)chorusEventDestroy(event_); }

void ChorusWork::Finish(chorusResult_t result) {
  std::call_once(finished_, [&] {
    std::exception_ptr error;
    if (result == chorusSuccess) {
      try {
        if (finalize_) finalize_();
      } catch (...) {
        error = std::current_exception();
      }
    } else {
      // The communicator's last error names the peer and the operation.
      const char* detail = chorusGetLastError(comm_);
      error = std::make_exception_ptr(std::runtime_error(
          std::string("Chorus ") + what_ + " failed: " + chorusGetErrorString(result) +
          (detail != nullptr && detail[0] != '\0' ? std::string(": ") + detail : std::string())));
    }
    Settle(error);
  });
}

void ChorusWork::Settle(std::exception_ptr error) {
  finalize_ = nullptr;
  finish(error);  // completed_, exception_, cv_
  if (error) {
    future_->setError(error);
  } else {
    future_->markCompleted(c10::IValue(outputs_));
  }
}

void ChorusWork::Issued() {
  {
    std::lock_guard<std::mutex> lock(issue_mutex_);
    issued_ = true;
  }
  issue_cv_.notify_all();
}

void ChorusWork::NotIssued(std::exception_ptr error) {
  std::call_once(finished_, [&] { Settle(error); });
  {
    std::lock_guard<std::mutex> lock(issue_mutex_);
    abandoned_ = true;
  }
  issue_cv_.notify_all();
}

bool ChorusWork::WaitIssued() {
  std::unique_lock<std::mutex> lock(issue_mutex_);
  issue_cv_.wait(lock, [&] { return issued_ || abandoned_; });
  return issued_;
}

bool ChorusWork::isCompleted() {
  {
    std::lock_guard<std::mutex> lock(issue_mutex_);
    if (!issued_) return abandoned_;  // an unissued event would read as complete
  }
  const chorusResult_t result = chorusEventQuery(event_);
  if (result != chorusInProgress) Finish(result);
  std::lock_guard<std::mutex> lock(mutex_);
  return completed_;
}

void ChorusWork::CompleteBlocking() {
  if (WaitIssued()) Finish(chorusEventSynchronize(event_));
}

bool ChorusWork::wait(std::chrono::milliseconds timeout) {
  {
    // Its block ends on this thread, after this call: waiting would hang.
    std::lock_guard<std::mutex> lock(issue_mutex_);
    TORCH_CHECK(issued_ || abandoned_, "Chorus ", what_,
                ": waited on inside its coalescing block (batch_isend_irecv issues it when the block ends)");
  }
  if (timeout == kNoTimeout) {
    // Bounded by the communicator's timeout, like every Chorus wait.
    CompleteBlocking();
  } else {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    chorusResult_t result = chorusEventQuery(event_);
    while (result == chorusInProgress && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      result = chorusEventQuery(event_);
    }
    if (result == chorusInProgress) {
      throw std::runtime_error("Chorus " + what_ + ": wait timed out after " + std::to_string(timeout.count()) +
                               " ms");
    }
    if (WaitIssued()) Finish(result);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (exception_) std::rethrow_exception(exception_);
  return true;
}

std::vector<at::Tensor> ChorusWork::result() { return outputs_; }

int ChorusWork::sourceRank() const { return source_rank_ >= 0 ? source_rank_ : c10d::Work::sourceRank(); }

c10::intrusive_ptr<c10::ivalue::Future> ChorusWork::getFuture() {
  // Someone may wait on the future alone: make sure the work gets finished.
  std::call_once(watched_, [this] {
    c10::intrusive_ptr<ChorusWork> self = c10::intrusive_ptr<ChorusWork>::reclaim_copy(this);
    if (!completions_->Push([self] { self->CompleteBlocking(); })) CompleteBlocking();
  });
  return future_;
}

}  // namespace torch_chorus
