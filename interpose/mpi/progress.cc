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

struct Helper {
  std::atomic<int> inside{0};                   // threads in a watched wait
  std::atomic<unsigned long long> entries{0};   // watched waits begun so far
  std::mutex mpi_mutex;                         // held around every probe
  std::mutex sleep_mutex;
  std::condition_variable wake;                 // stop
  bool stop = false;                            // under sleep_mutex
  bool stopped = false;                         // under mpi_mutex: no probe after this

  void Run() {
    unsigned long long seen = ~0ull;
    std::unique_lock<std::mutex> lock(sleep_mutex);
    while (!stop) {
      wake.wait_for(lock, kTick, [this] { return stop; });
      const unsigned long long now = entries.load(std::memory_order_acquire);
      if (inside.load(std::memory_order_acquire) == 0 || now != seen) {
        seen = now;  // nobody waiting, or new waits since the last tick
        continue;
      }
      // The same waits for a whole tick: drive MPI until they end.
      while (!stop && inside.load(std::memory_order_acquire) > 0 &&
             entries.load(std::memory_order_acquire) == now) {
        lock.unlock();
        {
          std::lock_guard<std::mutex> mpi(mpi_mutex);
          if (!stopped && inside.load(std::memory_order_acquire) > 0) {
            int flag = 0;
            PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
          }
        }
        lock.lock();
        wake.wait_for(lock, kProbeInterval, [this] { return stop; });
      }
      seen = ~0ull;
    }
  }
};

Helper* helper = nullptr;
std::once_flag start_once;

Helper* Started() {
  std::call_once(start_once, [] {
    if (!ProgressHelperEnabled()) return;
    helper = new Helper();  // never freed: the thread may outlive MPI_Finalize's caller
    std::thread([] { helper->Run(); }).detach();
  });
  return helper;
}

}  // namespace

ProgressWatch::ProgressWatch() {
  if (Helper* h = Started()) {
    h->entries.fetch_add(1, std::memory_order_acq_rel);
    h->inside.fetch_add(1, std::memory_order_acq_rel);
  }
}

ProgressWatch::~ProgressWatch() {
  if (Helper* h = helper) {
    h->inside.fetch_sub(1, std::memory_order_acq_rel);
    std::lock_guard<std::mutex> wait_for_probe(h->mpi_mutex);  // none runs once we return
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
  std::lock_guard<std::mutex> mpi(h->mpi_mutex);
  h->stopped = true;
}

}  // namespace chorus_mpi
