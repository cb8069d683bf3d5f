// A store-then-load handshake (Dekker) between threads of this process
// where one side runs on every call and the other rarely: the common side
// pays a compiler barrier instead of a full fence (an atomic
// read-modify-write, 5-10 ns), and the rare side pays for both with
// membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), which makes every running
// thread of the process execute a full barrier (about 0.1 us here).
//
// Use: the common side stores, calls LightFence(), then loads; the rare side
// stores, calls HeavyFence(), then loads. Then at least one of them sees the
// other's store, as with seq_cst fences on both sides. Where the kernel
// lacks the command (or refuses to register it), both are full fences.
#pragma once

namespace chorus_mpi {

void HeavyFence();

// Whether HeavyFence is membarrier; decided once per process, on first use.
bool HeavyFenceIsMembarrier();

inline void LightFence() {
  if (HeavyFenceIsMembarrier()) {
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
  } else {
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
  }
}

}  // namespace chorus_mpi
