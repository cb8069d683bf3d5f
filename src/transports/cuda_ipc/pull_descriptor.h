// The message a CUDA IPC sender puts on the carrier ahead of each message of
// a device call: how the receiver gets the bytes (pulled from the sender's
// device buffer, or sent inline after it because they are in host memory).
#pragma once

#include <cstdint>

#include "transports/cuda_ipc/device_ipc.h"

namespace chorus {

// Carried with the message's tag with this bit flipped, so that a receiver
// expecting the plain message (a host call: the ranks disagree on the kind
// of their buffers) fails with the carrier's matching error, not a hang.
constexpr uint64_t kPullDescriptorTagBit = uint64_t{1} << 62;

enum class PullMode : uint32_t {
  kEmpty = 1,   // zero bytes: nothing follows
  kInline = 2,  // the bytes follow on the carrier (host memory at the sender)
  kPull = 3,    // the receiver copies them from the sender's device buffer
};

struct PullDescriptor {
  static constexpr uint32_t kMagic = 0x70756c6c;  // "pull"
  uint32_t magic = kMagic;
  PullMode mode = PullMode::kEmpty;
  uint64_t bytes = 0;
  // kPull: the sender's count of pulled messages to this receiver, which the
  // receiver acknowledges when done (pull_acks.h).
  uint64_t sequence = 0;
  // kPull between threads of one process: the buffer itself.
  uint64_t address = 0;
  // kPull between processes: where the buffer lies in an exported allocation.
  ExportedBuffer buffer;
};

}  // namespace chorus
