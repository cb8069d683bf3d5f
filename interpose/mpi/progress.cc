#include "interpose/mpi/progress.h"

#include <mpi.h>

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "interpose/mpi/asymmetric_fence.h"
#include "interpose/mpi/report.h"

namespace chorus_mpi {
namespace {

constexpr auto kTick = std::chrono::milliseconds(5);
constexpr auto kProbeInterval = std::chrono::microseconds(100);

}  // namespace

// A thread's waits: twice the waits it finished, plus one while it is in
// one (odd: waiting). Only its thread writes it, so plain stores suffice;
// the helper reads it. A slot outlives its thread and serves a later one.
struct alignas(64) WaitSlot {
  std::atomic<uint64_t> mark{0};
  std::atomic<bool> in_use{true};
};

namespace {

struct Helper {
  // A probe is in flight or about to start. A leaving thread waits until it
  // is false. The helper sets it, HeavyFence, then reads the slot; the
  // thread writes its slot, LightFence, then reads `probing`: either the
  // helper sees the wait over or the thread sees the probe.
  std::atomic<bool> probing{false};
  std::atomic<bool> stopped{false};  // no probe after this (MPI_Finalize)
  std::mutex sleep_mutex;
  std::condition_variable wake;  // stop
  bool stop = false;             // under sleep_mutex

  std::mutex slots_mutex;
  std::deque<WaitSlot> slots;  // stable addresses; under slots_mutex
  pthread_key_t slot_key{};    // frees a thread's slot when it exits
  bool have_key = false;

  Helper() { have_key = pthread_key_create(&slot_key, &Release) == 0; }

  static void Release(void* slot) { static_cast<WaitSlot*>(slot)->in_use.store(false, std::memory_order_release); }

  // pthread_atfork: a fork while the helper scans the slots would leave the
  // child's copy of slots_mutex locked for good; it is held across the fork.
  static void LockSlots();
  static void UnlockSlots();

  WaitSlot* Claim() {
    std::lock_guard<std::mutex> lock(slots_mutex);
    WaitSlot* slot = nullptr;
    for (WaitSlot& free_slot : slots) {
      if (!free_slot.in_use.load(std::memory_order_acquire)) {
        slot = &free_slot;
        slot->in_use.store(true, std::memory_order_relaxed);
        break;
      }
    }
    if (slot == nullptr) slot = &slots.emplace_back();
    if (have_key) pthread_setspecific(slot_key, slot);
    return slot;
  }

  // One PMPI_Iprobe, unless the wait ended or MPI is finalizing.
  void Probe(const WaitSlot& slot, uint64_t mark) {
    probing.store(true, std::memory_order_seq_cst);
    HeavyFence();
    if (!stopped.load(std::memory_order_seq_cst) && slot.mark.load(std::memory_order_acquire) == mark) {
      int flag = 0;
      PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    }
    probing.store(false, std::memory_order_release);
  }

  // Until `probing` is false: a probe lasts microseconds.
  void AwaitNoProbe() const {
    for (int spins = 0; probing.load(std::memory_order_acquire); ++spins) {
      if (spins >= 64) std::this_thread::yield();
    }
  }

  // A slot in the same wait as at the last tick (its mark in `seen`), or
  // null; `seen` becomes the waits under way now.
  WaitSlot* FindStuck(std::vector<std::pair<WaitSlot*, uint64_t>>& seen, uint64_t* mark) {
    std::vector<std::pair<WaitSlot*, uint64_t>> now;
    WaitSlot* stuck = nullptr;
    std::lock_guard<std::mutex> lock(slots_mutex);
    for (WaitSlot& slot : slots) {
      const uint64_t current = slot.mark.load(std::memory_order_acquire);
      if (current % 2 == 0) continue;
      now.emplace_back(&slot, current);
      for (const auto& [was, was_mark] : seen) {
        if (stuck == nullptr && was == &slot && was_mark == current) {
          stuck = &slot;
          *mark = current;
        }
      }
    }
    seen.swap(now);
    return stuck;
  }

  void Run() {
    std::vector<std::pair<WaitSlot*, uint64_t>> seen;
    std::unique_lock<std::mutex> lock(sleep_mutex);
    while (!stop) {
      wake.wait_for(lock, kTick, [this] { return stop; });
      uint64_t mark = 0;
      WaitSlot* stuck = FindStuck(seen, &mark);
      if (stuck == nullptr) continue;
      // The same wait for a whole tick: drive MPI until it ends.
      while (!stop && stuck->mark.load(std::memory_order_acquire) == mark) {
        lock.unlock();
        Probe(*stuck, mark);
        lock.lock();
        wake.wait_for(lock, kProbeInterval, [this] { return stop; });
      }
      seen.clear();
    }
  }
};

Helper* helper = nullptr;

void Helper::LockSlots() { helper->slots_mutex.lock(); }
void Helper::UnlockSlots() { helper->slots_mutex.unlock(); }

// This thread's slot (initial-exec: a plain load off the thread pointer,
// where the default model calls __tls_get_addr).
__attribute__((tls_model("initial-exec"))) thread_local WaitSlot* thread_slot = nullptr;

// Starts the helper at the first watched wait. A function-local static, not
// std::call_once, which writes two thread-locals on every call.
Helper* Started() {
  static Helper* const started = [] {
    if (!ProgressHelperEnabled()) return static_cast<Helper*>(nullptr);
    LightFenceIsCompilerBarrier();  // registers before a wait relies on it
    helper = new Helper();  // never freed: the thread may outlive MPI_Finalize's caller
    pthread_atfork(&Helper::LockSlots, &Helper::UnlockSlots, &Helper::UnlockSlots);
    std::thread([] { helper->Run(); }).detach();
    return helper;
  }();
  return started;
}

}  // namespace

ProgressWatch::ProgressWatch() {
  Helper* h = Started();
  if (h == nullptr) return;
  WaitSlot* slot = thread_slot;
  if (slot == nullptr) slot = thread_slot = h->Claim();
  const uint64_t mark = slot->mark.load(std::memory_order_relaxed);
  if (mark % 2 != 0) return;  // inside an outer watch
  slot_ = slot;
  mark_ = mark + 1;
  // Release: the helper's probes act on what this thread did before its
  // wait (posted receives, their buffers); a plain store on x86.
  slot->mark.store(mark_, std::memory_order_release);
}

ProgressWatch::~ProgressWatch() {
  if (slot_ == nullptr) return;
  slot_->mark.store(mark_ + 1, std::memory_order_release);
  LightFence();
  helper->AwaitNoProbe();  // none runs once we return
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
  std::atomic_thread_fence(std::memory_order_seq_cst);  // the store above, then the load of `probing`
  h->AwaitNoProbe();
}

}  // namespace chorus_mpi
