// A hand-made schedule step: one send or receive of `bytes` with `peer`
// (from the send buffer into the receive buffer), for crafted schedules.
#pragma once

#include <cstddef>

#include "algorithms/schedule.h"

namespace chorus::sim {

inline Step Transfer(StepKind kind, int peer, size_t bytes) {
  Step step;
  step.kind = kind;
  step.peer = peer;
  step.src = BufferRange{BufferId::kSend, 0};
  step.dst = BufferRange{BufferId::kRecv, 0};
  step.bytes = bytes;
  return step;
}

}  // namespace chorus::sim
