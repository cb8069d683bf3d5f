// UcxTransport's waits: Progress (driving the worker while it is busy, then
// sleeping on its event fd), the wait on several transports (ArmWait) and
// Wakeup. Set-up, posting, completions (Drive) and tear-down:
// ucx_transport.cc.
#include <poll.h>
#include <sched.h>

#include <cerrno>

#include "transports/socket/wake_fds.h"
#include "transports/ucx/ucx_status.h"
#include "transports/ucx/ucx_transport.h"

namespace chorus {

namespace {

// How long a worker that found work a moment ago is driven before its
// transport sleeps on the worker's file descriptor. Over UCX's tcp a
// message of a megabyte moves a socket buffer at a time, each step needing
// a progress call: sleeping between the steps and waking on the fd halved
// the bandwidth (ucx_perftest tag_bw at 1 MiB on one host: 6.1 GB/s
// polling, 3.0-3.6 with -E sleep). A worker idle this long is waiting for
// a peer, not for its sockets.
constexpr std::chrono::microseconds kIdleBeforeSleep{100};
// How often that driving yields the core.
constexpr std::chrono::microseconds kYieldEvery{20};

}  // namespace

Status UcxTransport::ArmWorker(bool* busy) {
  const ucs_status_t armed = ucp_worker_arm(worker_);
  *busy = armed == UCS_ERR_BUSY;
  if (armed != UCS_OK && !*busy) return Fail(UcxError(armed, "ucp_worker_arm"));
  return Status::Ok();
}

Status UcxTransport::Sleep(std::unique_lock<std::mutex>& lock, int timeout_ms) {
  bool busy = false;
  CHORUS_RETURN_IF_ERROR(ArmWorker(&busy));
  if (busy) return Status::Ok();
  pollfd fds[2] = {{worker_fd_, POLLIN, 0}, {wakeup_.fd(), POLLIN, 0}};
  lock.unlock();
  const int ready = ::poll(fds, 2, timeout_ms);
  const int poll_errno = errno;
  if (fds[1].revents != 0) DrainWakeupFd(wakeup_.fd());
  lock.lock();
  if (ready < 0 && poll_errno != EINTR) return Fail(ErrnoError(poll_errno, "poll(UCX worker)"));
  return Status::Ok();
}

Status UcxTransport::DriveWhileActive(std::chrono::steady_clock::time_point until, bool* progressed) {
  using Clock = std::chrono::steady_clock;
  Clock::time_point last_active = Clock::now(), last_yield = last_active;
  while (!inflight_.empty()) {
    bool active = false;
    CHORUS_RETURN_IF_ERROR(Drive(progressed, &active));
    if (*progressed) return Status::Ok();
    const Clock::time_point now = Clock::now();
    if (active) last_active = now;
    if (now - last_active >= kIdleBeforeSleep || now >= until) break;
    // UCX's own thread (connection set-up, keepalive) must get a core now
    // and then, or a wire-up waits for the scheduler to preempt us.
    if (now - last_yield >= kYieldEvery) {
      ::sched_yield();
      last_yield = now;
    }
  }
  return Status::Ok();
}

Status UcxTransport::Progress(int timeout_ms) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!error_.ok()) return error_;
  if (shut_down_.load()) return Fail(InvalidUsage("UCX transport was shut down"));
  if (!connected_) return InvalidUsage("UCX transport: Progress before Connect");
  bool progressed = false;
  CHORUS_RETURN_IF_ERROR(Drive(&progressed));
  if (progressed || timeout_ms <= 0) return Status::Ok();
  if (!shares_cores_) {
    // Ranks that share cores need them to move their own bytes: no polling.
    const auto start = std::chrono::steady_clock::now();
    CHORUS_RETURN_IF_ERROR(DriveWhileActive(start + std::chrono::milliseconds(timeout_ms), &progressed));
    if (progressed) return Status::Ok();
    timeout_ms -= static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count());
    if (timeout_ms <= 0) return Status::Ok();
  }
  CHORUS_RETURN_IF_ERROR(Sleep(lock, timeout_ms));
  if (shut_down_.load()) return Fail(InvalidUsage("UCX transport was shut down"));
  return Drive(&progressed);
}

Status UcxTransport::ArmWait(bool look_only, WaitArm* arm) {
  *arm = WaitArm();
  std::lock_guard<std::mutex> lock(mutex_);
  if (!error_.ok()) return error_;
  if (shut_down_.load()) return Fail(InvalidUsage("UCX transport was shut down"));
  if (!connected_) return InvalidUsage("UCX transport: ArmWait before Connect");
  bool progressed = false;
  CHORUS_RETURN_IF_ERROR(Drive(&progressed));
  arm->fd = wait_set_.fd();
  if (progressed || look_only) {
    arm->ready = progressed;
    return Status::Ok();
  }
  return ArmWorker(&arm->ready);
}

void UcxTransport::DisarmWait() {
  // A Wakeup before or during the wait has done its work: the wait ended.
  DrainWakeupFd(wakeup_.fd());
}

void UcxTransport::Wakeup() { SignalWakeupFd(wakeup_.fd()); }

}  // namespace chorus
