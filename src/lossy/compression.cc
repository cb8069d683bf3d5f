#include "lossy/compression.h"

#include <cstring>
#include <memory>

#include "core/buffer_kinds.h"
#include "kernels/convert.h"
#include "lossy/compression_codecs.h"
#include "lossy/compression_stages.h"

namespace chorus {
namespace {

bool Overlap(const void* a, const void* b, size_t bytes) {
  auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return bytes > 0 && x < y + bytes && y < x + bytes;
}

// The last stage captures the shared pointer so a stream call keeps them.
using WireBuffers = CompressWireBuffers;

// The state's buffers when no earlier call's stage still holds them, else
// new ones (a call still queued on a stream keeps its own).
std::shared_ptr<WireBuffers> TakeWireBuffers(chorusCompressState* state) {
  if (state->wire != nullptr && state->wire.use_count() == 1) {
    // Order the earlier stages' last use of the buffers before our writes.
    std::atomic_thread_fence(std::memory_order_acquire);
    return state->wire;
  }
  state->wire = std::make_shared<WireBuffers>();
  return state->wire;
}

// Sign vote by AllGather of packed bits (Lion Cub's 1-bit allreduce).
Status SignVoteBits(StagedCall& call, const float* x, float* out, size_t count, int nranks,
                    std::shared_ptr<WireBuffers> wire) {
  const size_t bytes = PackedBitBytes(count);
  wire->mine.resize(bytes);
  wire->all.resize(bytes * static_cast<size_t>(nranks));
  CHORUS_RETURN_IF_ERROR(call.Before([=] { PackSignBits(x, count, wire->mine.data()); }));
  CHORUS_RETURN_IF_ERROR(call.Launch({InternalCollective(call.comm(), Collective::kAllGather, bytes, chorusUint8,
                                                         wire->mine.data(), wire->all.data())}));
  return call.After([=] { SignVoteFromBits(wire->all.data(), bytes, nranks, count, out); });
}

// Sign of an int8 Sum allreduce of per-rank values made by `encode`.
template <typename Encode>
Status SignOfInt8Sum(StagedCall& call, float* out, size_t count, std::shared_ptr<WireBuffers> wire, Encode encode) {
  wire->mine.resize(count);
  auto* values = reinterpret_cast<int8_t*>(wire->mine.data());
  CHORUS_RETURN_IF_ERROR(call.Before([=] { encode(values); }));  // After keeps `wire` alive
  CHORUS_RETURN_IF_ERROR(
      call.Launch({InternalCollective(call.comm(), Collective::kAllReduce, count, chorusInt8, values, values)}));
  return call.After([=, keep = wire] { SignOfSums(values, count, out); });
}

// Pipe-SGD truncation: 16-bit floats on the wire, float32 at both ends.
Status SixteenBitSum(StagedCall& call, const float* x, float* out, size_t count, DataType wire_type,
                     std::shared_ptr<WireBuffers> wire) {
  wire->mine.resize(count * 2);
  auto* values = reinterpret_cast<uint16_t*>(wire->mine.data());
  const bool half = wire_type == chorusFloat16;
  // Bulk SIMD conversions (kernels/convert.h), bit-identical to base/half.h's.
  CHORUS_RETURN_IF_ERROR(call.Before([=] {
    if (half) FloatToHalfKernel(values, x, count);
    else FloatToBfloat16Kernel(values, x, count);
  }));
  CHORUS_RETURN_IF_ERROR(
      call.Launch({InternalCollective(call.comm(), Collective::kAllReduce, count, wire_type, values, values)}));
  return call.After([=, keep = wire] {
    if (half) HalfToFloatKernel(out, values, count);
    else Bfloat16ToFloatKernel(out, values, count);
  });
}

Status OneBitErrorFeedback(StagedCall& call, const float* x, float* out, size_t count, int nranks,
                           chorusCompressState* state, std::shared_ptr<WireBuffers> wire) {
  const size_t bytes = OneBitRecordBytes(count);
  wire->mine.resize(bytes);
  wire->all.resize(bytes * static_cast<size_t>(nranks));
  CHORUS_RETURN_IF_ERROR(call.Before([=] { EncodeOneBit(x, state->residual.data(), count, wire->mine.data()); }));
  CHORUS_RETURN_IF_ERROR(call.Launch({InternalCollective(call.comm(), Collective::kAllGather, bytes, chorusUint8,
                                                         wire->mine.data(), wire->all.data())}));
  return call.After([=] { DecodeOneBitMean(wire->all.data(), bytes, nranks, count, out); });
}

size_t WireBytes(chorusCompression_t mode, size_t count) {
  switch (mode) {
    case chorusCompressSignVote: return PackedBitBytes(count);
    case chorusCompressSignVoteCounts: case chorusCompressInt8: return count;
    case chorusCompressFp16: case chorusCompressBf16: return 2 * count;
    case chorusCompressOneBitEF: return OneBitRecordBytes(count);
    default: return 0;
  }
}

}  // namespace

Status CreateCompressState(chorusCompression_t mode, size_t count, DataType dtype, chorusComm* comm,
                           chorusCompressState** out) {
  if (out == nullptr) return InvalidArgument("state is NULL");
  if (static_cast<int>(mode) < 0 || mode >= chorusNumCompressions) {
    return InvalidArgument("unknown compression mode ", static_cast<int>(mode));
  }
  if (dtype != chorusFloat32) return InvalidArgument("datatype ", static_cast<int>(dtype), " is not float32");
  if (count > SIZE_MAX / 8) return InvalidArgument("count ", count, " overflows the address space");
  const int nranks = comm->impl->nranks();
  const bool int8_sums = mode == chorusCompressInt8 || mode == chorusCompressSignVoteCounts;
  if (int8_sums && nranks > 127) return InvalidArgument("int8 sums need at most 127 ranks, not ", nranks);
  auto state = std::make_unique<chorusCompressState>();
  state->mode = mode;
  state->count = count;
  state->comm = comm;
  state->nranks = nranks;
  if (mode == chorusCompressOneBitEF) state->residual.assign(count, 0.0f);
  *out = state.release();
  return Status::Ok();
}

Status AllReduceCompressed(const void* sendbuff, void* recvbuff, size_t count, DataType dtype,
                           chorusCompressState* state, chorusComm* comm, chorusStream* stream) {
  if (state == nullptr || state->magic != chorusCompressState::kLive) return InvalidArgument("invalid state");
  if (dtype != chorusFloat32) return InvalidArgument("datatype ", static_cast<int>(dtype), " is not float32");
  if (state->comm != comm) return InvalidArgument("state was created for another communicator");
  if (count != state->count) return InvalidArgument("count ", count, " differs from the state's ", state->count);
  if (count > 0 && (sendbuff == nullptr || recvbuff == nullptr)) {
    return InvalidArgument("sendbuff and recvbuff must not be NULL with count ", count);
  }
  if (sendbuff != recvbuff && Overlap(sendbuff, recvbuff, count * sizeof(float))) {
    return InvalidArgument("sendbuff and recvbuff overlap but the call is not in place");
  }
  if (count == 0) return Status::Ok();
  // The codecs encode and decode on the CPU, straight from and into the
  // user's buffers.
  CHORUS_RETURN_IF_ERROR(RequireCpuMemory(*comm->impl, "sendbuff", sendbuff, "the compression codecs"));
  CHORUS_RETURN_IF_ERROR(RequireCpuMemory(*comm->impl, "recvbuff", recvbuff, "the compression codecs"));

  state->bytes_on_wire += WireBytes(state->mode, count);
  state->bytes_uncompressed += count * sizeof(float);
  const auto* x = static_cast<const float*>(sendbuff);
  auto* out = static_cast<float*>(recvbuff);
  const int nranks = state->nranks;
  std::shared_ptr<WireBuffers> wire = TakeWireBuffers(state);
  StagedCall call(comm, stream);
  switch (state->mode) {
    case chorusCompressSignVote: return SignVoteBits(call, x, out, count, nranks, wire);
    case chorusCompressSignVoteCounts:
      return SignOfInt8Sum(call, out, count, wire, [=](int8_t* votes) { SignVotes(x, count, votes); });
    case chorusCompressInt8:
      return SignOfInt8Sum(call, out, count, wire, [=](int8_t* q) { QuantizeInt8L1(x, count, nranks, q); });
    case chorusCompressFp16: return SixteenBitSum(call, x, out, count, chorusFloat16, wire);
    case chorusCompressBf16: return SixteenBitSum(call, x, out, count, chorusBfloat16, wire);
    case chorusCompressOneBitEF: return OneBitErrorFeedback(call, x, out, count, nranks, state, wire);
    default: return InternalError("unknown compression mode ", static_cast<int>(state->mode));
  }
}

}  // namespace chorus
