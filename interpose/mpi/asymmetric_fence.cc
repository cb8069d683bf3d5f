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

bool LightFenceIsCompilerBarrier() {
  // A function-local static: decided (and registered) once, before the
  // first handshake of either side relies on it.
  static const bool registered = [] {
    const long commands = Membarrier(MEMBARRIER_CMD_QUERY);
    return commands > 0 && (commands & MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0 && Register();
  }();
  return registered;
}

void HeavyFence() {
  std::atomic_thread_fence(std::memory_order_seq_cst);  // our own store, before the others' barriers
  if (!LightFenceIsCompilerBarrier()) return;           // both sides fence
  if (Membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return;
  // The command wants this process registered, which a forked child may not
  // be on every kernel (Linux 6 keeps it across fork): register, barrier again.
  if (errno == EPERM && Register()) Membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
}

}  // namespace chorus_mpi
