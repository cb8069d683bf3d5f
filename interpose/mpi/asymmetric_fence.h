// A store-then-load handshake (Dekker) between threads of this process,
// where one side runs on every call and the other rarely (the progress
// helper): the common side pays a compiler barrier instead of a full fence
// (an atomic read-modify-write, 5-10 ns), and the rare side pays for both
// with membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), which makes every
// running thread of the process execute a full barrier before it returns
// (about 0.1 us here).
//
// Use: the common side stores, LightFence(), then loads; the rare side
// stores, HeavyFence(), then loads. At least one of them then sees the
// other's store, as with seq_cst fences on both sides. Where the kernel
// lacks the command or refuses to register it, both are full fences.
#pragma once

namespace chorus_mpi {

// Whether LightFence may be a compiler barrier: registered with the kernel,
// decided once per process on first use (call it before the first
// handshake).
bool LightFenceIsCompilerBarrier();

inline void LightFence() {
  if (LightFenceIsCompilerBarrier()) {
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
  } else {
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
  }
}

void HeavyFence();

}  // namespace chorus_mpi
