#include "base/asymmetric_fence.h"

#include <errno.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

namespace chorus {
namespace {

long Membarrier(int command) { return ::syscall(__NR_membarrier, command, 0, 0); }

// The commands the kernel offers (0: none, or no membarrier at all).
long Commands() {
  static const long commands = [] {
    const long offered = Membarrier(MEMBARRIER_CMD_QUERY);
    return offered > 0 ? offered : 0;
  }();
  return commands;
}

int BarrierCommand(FenceScope scope) {
  return scope == FenceScope::kProcess ? MEMBARRIER_CMD_PRIVATE_EXPEDITED : MEMBARRIER_CMD_GLOBAL_EXPEDITED;
}

int RegisterCommand(FenceScope scope) {
  return scope == FenceScope::kProcess ? MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED
                                       : MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED;
}

bool Register(FenceScope scope) {
  return (Commands() & BarrierCommand(scope)) != 0 && Membarrier(RegisterCommand(scope)) == 0;
}

}  // namespace

bool LightFenceIsCompilerBarrier(FenceScope scope) {
  // Function-local statics: decided (and registered) once, before the
  // first handshake of either side relies on it.
  if (scope == FenceScope::kProcess) {
    static const bool process = Register(FenceScope::kProcess);
    return process;
  }
  static const bool host = Register(FenceScope::kHost);
  return host;
}

void HeavyFence(FenceScope scope) {
  std::atomic_thread_fence(std::memory_order_seq_cst);  // our own store, before the others' barriers
  if (scope == FenceScope::kProcess && !LightFenceIsCompilerBarrier(scope)) return;  // both sides fence
  // kHost: the common side may be another process that registered, even
  // when this one did not.
  if ((Commands() & BarrierCommand(scope)) == 0) return;
  if (Membarrier(BarrierCommand(scope)) == 0) return;
  // The private command wants this process registered, which a forked
  // child may not be on every kernel: register and barrier again.
  if (scope == FenceScope::kProcess && errno == EPERM && Register(scope)) Membarrier(BarrierCommand(scope));
}

}  // namespace chorus
