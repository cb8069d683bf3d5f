// Operation: one validated call (a collective or one side of a send/recv),
// as the communicator launches it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "algorithms/algorithm.h"
#include "algorithms/collective.h"
#include "base/memory_kind.h"

namespace chorus {

struct Operation {
  enum class Kind : uint8_t { kCollective, kSend, kRecv };
  Kind kind = Kind::kCollective;

  // kCollective
  CollectiveArgs args;
  // kSend / kRecv
  int peer = -1;
  size_t bytes = 0;
  DataType dtype = chorusUint8;

  const void* send = nullptr;
  void* recv = nullptr;
  // Where send and recv live (the API classifies them once per call):
  // local work on them goes through that kind's engine.
  MemoryKind send_kind = MemoryKind::kHost;
  MemoryKind recv_kind = MemoryKind::kHost;

  // Reductions the kernels do not know: Avg divides the result by nranks;
  // PreMulSum scales each input by `scalar` (one element of args.dtype).
  // Internal calls (calibration) may pin an algorithm; kAuto lets the
  // communicator choose (CHORUS_ALGO, then the tuner, then the default).
  Algorithm algorithm = Algorithm::kAuto;
  // Launched from a group (LaunchTogether): always the general path, never
  // the board (core/board_allreduce.h).
  bool grouped = false;

  // Steady-clock ns when the call was queued on a host stream or in a group
  // (the flight recorder's "enqueued"); 0: when its launch began.
  int64_t enqueued_ns = 0;

  bool average = false;
  bool premultiply = false;
  uint8_t scalar[8] = {};
};

}  // namespace chorus
