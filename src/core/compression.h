// Compressed allreduce (chorusAllReduceCompressed): the state behind the
// public chorusCompressState_t handle and the staged call per mode.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "base/dtype.h"
#include "base/status.h"
#include "chorus/chorus.h"

struct chorusComm;
struct chorusStream;

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
