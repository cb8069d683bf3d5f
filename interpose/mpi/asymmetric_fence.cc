#include "interpose/mpi/asymmetric_fence.h"

#include <errno.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

namespace chorus_mpi {
namespace {

long Membarrier(int command) { return ::syscall(__NR_membarrier, command, 0, 0); }

bool Register() { return Membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0; }

}  // namespace

bool HeavyFenceIsMembarrier() {
  // A function-local static: decided once, before either side first runs.
  static const bool registered = [] {
    const long commands = Membarrier(MEMBARRIER_CMD_QUERY);
    return commands > 0 && (commands & MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0 && Register();
  }();
  return registered;
}

void HeavyFence() {
  if (!HeavyFenceIsMembarrier()) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return;
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);  // this thread's own store, before the others' barriers
  if (Membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return;
  // A forked child inherits the decision but not the registration (the
  // kernel keeps it per address space): register here and barrier again.
  if (errno == EPERM && Register() && Membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return;
  // Unreachable on a kernel that registered once; the best left is a fence.
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

}  // namespace chorus_mpi
