// Futex helpers on words in shared memory (no FUTEX_PRIVATE_FLAG: the
// waiter and the waker may be different processes).
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdint>

#include "transports/shm/shm_layout.h"
#include "transports/shm/shm_wake_socket.h"

namespace chorus {
namespace shm {

// Sleeps while *word == expected, at most `timeout_us`.
inline void FutexWait(std::atomic<uint32_t>* word, uint32_t expected, int64_t timeout_us) {
  timespec timeout = {static_cast<time_t>(timeout_us / 1000000), static_cast<long>(timeout_us % 1000000) * 1000};
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &timeout, nullptr, 0);
}

inline void FutexWakeAll(std::atomic<uint32_t>* word) {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

// Wakes the owner of `header` unconditionally (Wakeup, Shutdown), on its
// futex and, when it sleeps in poll on its wake socket, there too. The
// seq_cst bump then load pairs with the owner's store of `sleeping` then
// load of the word (ShmTransport::ArmWait): either it sees the new word or
// we see it asleep on the socket.
inline void WakeOwner(SegmentHeader* header) {
  header->futex_word.fetch_add(1, std::memory_order_seq_cst);
  FutexWakeAll(&header->futex_word);
  if (header->sleeping.load(std::memory_order_seq_cst) == kSleepingOnWakeSocket) SendWake(*header);
}

// After publishing work for the owner of `header`: wakes it only when it
// announced that it sleeps. The fence pairs with the one the sleeper puts
// between setting `sleeping` and its last look for work (Dekker), so either
// it sees our work or we see its flag.
inline void WakeOwnerIfSleeping(SegmentHeader* header) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (header->sleeping.load(std::memory_order_relaxed) != 0) WakeOwner(header);
}

}  // namespace shm
}  // namespace chorus
