// A store-then-load handshake (Dekker) where one side runs on every call
// and the other rarely (a sleeper, a watchdog): the common side pays a
// compiler barrier instead of a full fence (an atomic read-modify-write,
// 5-10 ns), and the rare side pays for both with membarrier(2), which makes
// every running thread in scope execute a full barrier before it returns.
//
// Use: the common side stores, LightFence(scope), then loads; the rare side
// stores, HeavyFence(scope), then loads. At least one of them then sees the
// other's store, as with seq_cst fences on both sides.
//   kProcess: both sides are threads of this process
//             (MEMBARRIER_CMD_PRIVATE_EXPEDITED).
//   kHost:    the rare side may be another process of this host
//             (MEMBARRIER_CMD_GLOBAL_EXPEDITED, which reaches the processes
//             that registered for it: LightFence registers this one).
// Where the kernel lacks the command or refuses it, both are full fences.
// A rare side that cannot use it while the common side's process could (a
// seccomp filter on one process only) may miss the other's store: callers
// bound their sleeps, so that costs time, never a hang.
#pragma once

namespace chorus {

enum class FenceScope { kProcess, kHost };

// Whether this process's LightFence(scope) may be a compiler barrier:
// registered with the kernel, decided once per process on first use.
bool LightFenceIsCompilerBarrier(FenceScope scope);

inline void LightFence(FenceScope scope) {
  if (LightFenceIsCompilerBarrier(scope)) {
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
  } else {
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
  }
}

void HeavyFence(FenceScope scope);

}  // namespace chorus
