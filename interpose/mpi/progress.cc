#include "interpose/mpi/progress.h"

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "interpose/mpi/report.h"

namespace chorus_mpi {
namespace {

constexpr auto kTick = std::chrono::milliseconds(5);
constexpr auto kProbeInterval = std::chrono::microseconds(100);

// How many threads are in a watched wait (low 32 bits) and how many waits
// began so far (high 32 bits, wrapping): one atomic add on entry, so a short
// wait costs two uncontended read-modify-writes and a load.
constexpr unsigned long long kInsideMask = 0xffffffffull;
constexpr unsigned long long kEntry = (1ull << 32) + 1;

struct Helper {
  std::atomic<unsigned long long> waits{0};  // inside | entries << 32
  // A probe is in flight or about to start. A leaving thread waits until it
  // is false; the helper sets it before it looks at `waits` (both seq_cst,
  // so either the helper sees the thread gone or the thread sees the probe).
  std::atomic<bool> probing{false};
  std::atomic<bool> stopped{false};  // no probe after this (MPI_Finalize)
  std::mutex sleep_mutex;
  std::condition_variable wake;  // stop
  bool stop = false;             // under sleep_mutex

  static unsigned long long Inside(unsigned long long word) { return word & kInsideMask; }

  // One PMPI_Iprobe, unless every watched wait ended or MPI is finalizing.
  void Probe() {
    probing.store(true, std::memory_order_seq_cst);
    if (!stopped.load(std::memory_order_seq_cst) && Inside(waits.load(std::memory_order_seq_cst)) > 0) {
      int flag = 0;
      PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    }
    probing.store(false, std::memory_order_release);
  }

  // Until `probing` is false: a probe lasts microseconds.
  void AwaitNoProbe() const {
    for (int spins = 0; probing.load(std::memory_order_seq_cst); ++spins) {
      if (spins >= 64) std::this_thread::yield();
    }
  }

  void Run() {
    unsigned long long seen = ~0ull;
    std::unique_lock<std::mutex> lock(sleep_mutex);
    while (!stop) {
      wake.wait_for(lock, kTick, [this] { return stop; });
      const unsigned long long now = waits.load(std::memory_order_acquire);
      if (Inside(now) == 0 || (now >> 32) != (seen >> 32)) {
        seen = now;  // nobody waiting, or new waits since the last tick
        continue;
      }
      // The same waits for a whole tick: drive MPI until they end.
      while (!stop) {
        const unsigned long long current = waits.load(std::memory_order_acquire);
        if (Inside(current) == 0 || (current >> 32) != (now >> 32)) break;
        lock.unlock();
        Probe();
        lock.lock();
        wake.wait_for(lock, kProbeInterval, [this] { return stop; });
      }
      seen = ~0ull;
    }
  }
};

Helper* helper = nullptr;

// Starts the helper at the first watched wait. A function-local static, not
// std::call_once, which writes two thread-locals on every call.
Helper* Started() {
  static Helper* const started = [] {
    if (!ProgressHelperEnabled()) return static_cast<Helper*>(nullptr);
    helper = new Helper();  // never freed: the thread may outlive MPI_Finalize's caller
    std::thread([] { helper->Run(); }).detach();
    return helper;
  }();
  return started;
}

}  // namespace

ProgressWatch::ProgressWatch() {
  if (Helper* h = Started()) h->waits.fetch_add(kEntry, std::memory_order_seq_cst);
}

ProgressWatch::~ProgressWatch() {
  if (Helper* h = helper) {
    h->waits.fetch_sub(1, std::memory_order_seq_cst);
    h->AwaitNoProbe();  // none runs once we return
  }
}

void StopProgressHelper() {
  Helper* h = helper;
  if (h == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(h->sleep_mutex);
    h->stop = true;
  }
  h->wake.notify_all();
  h->stopped.store(true, std::memory_order_seq_cst);
  h->AwaitNoProbe();
}

}  // namespace chorus_mpi
