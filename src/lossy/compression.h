// Compressed allreduce (chorusAllReduceCompressed): the state behind the
// public chorusCompressState_t handle and the staged call per mode.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/dtype.h"
#include "base/status.h"
#include "chorus/chorus.h"

struct chorusComm;
struct chorusStream;

namespace chorus {
// One call's wire buffers (this rank's payload, every rank's), kept alive by
// the stages that use them.
struct CompressWireBuffers {
  std::vector<uint8_t> mine;
  std::vector<uint8_t> all;
};
}  // namespace chorus

struct chorusCompressState {
  static constexpr uint32_t kLive = 0xc0de1055u;
  uint32_t magic = kLive;
  chorusCompression_t mode = chorusCompressSignVote;
  size_t count = 0;
  chorusComm* comm = nullptr;
  int nranks = 1;
  // 1-bit error feedback: what the last calls' signs did not carry. Written
  // in stream order by the call's encode stage.
  std::vector<float> residual;
  // The last call's wire buffers, reused by the next call once no stage
  // holds them any more (no allocation, page faults or clearing per call).
  std::shared_ptr<chorus::CompressWireBuffers> wire;
  std::atomic<unsigned long long> bytes_on_wire{0};
  std::atomic<unsigned long long> bytes_uncompressed{0};
};

namespace chorus {

Status CreateCompressState(chorusCompression_t mode, size_t count, DataType dtype, chorusComm* comm,
                           chorusCompressState** out);

// Validates everything, then runs (or enqueues) the call.
Status AllReduceCompressed(const void* sendbuff, void* recvbuff, size_t count, DataType dtype,
                           chorusCompressState* state, chorusComm* comm, chorusStream* stream);

}  // namespace chorus
