#include "core/host_stream.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <utility>

#include "base/log.h"
#include "topology/thread_placement.h"

namespace chorus {
namespace {
using std::chrono::microseconds;

// The worker keeps polling this long after its last item: back-to-back
// calls (issue, synchronize, issue, ...) then never pay a wake-up.
constexpr SpinBudget kWorkerPoll{microseconds(2), microseconds(50)};
// Synchronize polls this long before sleeping: a small collective is done
// by then on idle cores; longer ones are worth the sleep.
constexpr SpinBudget kSynchronizePoll{microseconds(2), microseconds(50)};

// The first fields of the kernel's struct sched_attr (SCHED_ATTR_SIZE_VER0);
// <linux/sched/types.h> clashes with glibc's <sched.h>.
struct SchedAttr {
  uint32_t size;
  uint32_t policy;
  uint64_t flags;
  int32_t nice;
  uint32_t priority;
  uint64_t runtime_ns;  // for SCHED_OTHER (Linux >= 6.12): the requested slice
  uint64_t deadline_ns;
  uint64_t period_ns;
};
constexpr uint64_t kWorkerSliceNs = 100'000;  // the kernel's minimum

// The worker sleeps in epoll while a collective waits on the network, then
// has a few microseconds of work (a reduction, the next send) on which the
// whole ring waits. On cores shared with computing threads, a woken task
// with the default slice (3 ms) often waits for the running one's slice to
// end; EEVDF lets a task that asks for a short slice preempt at wake-up.
// No privilege is needed. Older kernels ignore or refuse it: then nothing
// changes.
void RequestShortSlice() {
#if defined(SYS_sched_getattr) && defined(SYS_sched_setattr)
  SchedAttr attr = {};
  if (::syscall(SYS_sched_getattr, 0, &attr, sizeof(attr), 0) != 0) return;
  if (attr.policy != SCHED_OTHER) return;  // batch, idle or real-time: the caller's choice
  attr.size = sizeof(attr);
  attr.flags = 0;
  attr.runtime_ns = kWorkerSliceNs;
  (void)::syscall(SYS_sched_setattr, 0, &attr, 0);
#endif
}
}  // namespace

HostStream::HostStream(std::unique_ptr<DeviceStreamLink> link)
    : link_(std::move(link)),
      worker_poll_(kWorkerPoll), synchronize_poll_(kSynchronizePoll), worker_([this] { Serve(); }) {}

HostStream::~HostStream() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_.store(true, std::memory_order_release);
  }
  work_cv_.notify_all();
  worker_.join();
}

void HostStream::Enqueue(std::function<Status()> work, bool cores_shared) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Under the lock: the link's tickets must follow the queue's order.
    if (link_ != nullptr) work = link_->Bracket(std::move(work));
    queue_.push_back(Item{std::move(work), cores_shared});
    last_cores_shared_.store(cores_shared, std::memory_order_relaxed);
    outstanding_.fetch_add(1, std::memory_order_relaxed);
    queued_.fetch_add(1, std::memory_order_release);
  }
  // Cheap when the worker is not asleep (no waiter, no syscall).
  work_cv_.notify_one();
}

void HostStream::PlaceWorker(const CpuList& cpus) {
  if (cpus.empty() || placed_.load(std::memory_order_relaxed) || placed_.exchange(true)) return;
  const Status status = BindThread(static_cast<unsigned long>(worker_.native_handle()), cpus);
  if (!status.ok()) CHORUS_WARN("INIT", "host stream worker stays where it is: ", status.message());
}

Status HostStream::Synchronize() {
  synchronize_poll_.Wait([&] { return outstanding_.load(std::memory_order_acquire) == 0; },
                         last_cores_shared_.load(std::memory_order_relaxed));
  std::unique_lock<std::mutex> lock(mutex_);
  idle_cv_.wait(lock, [&] { return queue_.empty() && !running_; });
  Status status = first_error_;
  first_error_ = Status::Ok();
  return status;
}

Status HostStream::Query() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!queue_.empty() || running_) return Status(chorusInProgress, "work is pending on the stream");
  return first_error_;  // kept until Synchronize reports it
}

Status HostStream::PendingFailure() {
  std::lock_guard<std::mutex> lock(mutex_);
  return first_error_;
}

void HostStream::Serve() {
  RequestShortSlice();
  std::unique_lock<std::mutex> lock(mutex_);
  bool cores_shared = false;  // the last item's: whether to poll for the next
  for (;;) {
    if (queue_.empty() && !stopping_.load(std::memory_order_relaxed)) {
      lock.unlock();
      worker_poll_.Wait(
          [&] { return queued_.load(std::memory_order_acquire) > 0 || stopping_.load(std::memory_order_acquire); },
          cores_shared);
      lock.lock();
      work_cv_.wait(lock, [&] { return stopping_.load(std::memory_order_relaxed) || !queue_.empty(); });
    }
    if (queue_.empty()) return;  // stopping and drained
    Item item = std::move(queue_.front());
    queue_.pop_front();
    queued_.fetch_sub(1, std::memory_order_relaxed);
    running_ = true;
    cores_shared = item.cores_shared;
    lock.unlock();
    Status status = item.work();
    item.work = nullptr;  // release what the item holds before it counts as done
    lock.lock();
    running_ = false;
    if (!status.ok() && first_error_.ok()) first_error_ = status;
    outstanding_.fetch_sub(1, std::memory_order_release);
    if (queue_.empty()) idle_cv_.notify_all();
  }
}

}  // namespace chorus
