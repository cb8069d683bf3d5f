#include "lossy/gossip.h"

#include <cstring>
#include <memory>
#include <type_traits>

#include "base/half.h"
#include "core/buffer_kinds.h"
#include "lossy/compression_stages.h"

namespace chorus {
namespace {

uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// dst = 0.5 * a + 0.5 * b, rounded once to the element type.
void AverageTwo(void* dst, const void* a, const void* b, size_t count, DataType dtype) {
  switch (dtype) {
    case chorusFloat32: {
      auto* d = static_cast<float*>(dst);
      auto* x = static_cast<const float*>(a);
      auto* y = static_cast<const float*>(b);
      for (size_t i = 0; i < count; ++i) d[i] = static_cast<float>(0.5 * x[i] + 0.5 * y[i]);
      break;
    }
    case chorusFloat64: {
      auto* d = static_cast<double*>(dst);
      auto* x = static_cast<const double*>(a);
      auto* y = static_cast<const double*>(b);
      for (size_t i = 0; i < count; ++i) d[i] = 0.5 * x[i] + 0.5 * y[i];
      break;
    }
    case chorusFloat16: case chorusBfloat16: {
      const bool half = dtype == chorusFloat16;
      auto* d = static_cast<uint16_t*>(dst);
      auto* x = static_cast<const uint16_t*>(a);
      auto* y = static_cast<const uint16_t*>(b);
      for (size_t i = 0; i < count; ++i) {
        float fx = half ? HalfToFloat(x[i]) : Bfloat16ToFloat(x[i]);
        float fy = half ? HalfToFloat(y[i]) : Bfloat16ToFloat(y[i]);
        float mean = 0.5f * fx + 0.5f * fy;  // exact in float32 for 16-bit inputs
        d[i] = half ? FloatToHalf(mean) : FloatToBfloat16(mean);
      }
      break;
    }
    default: break;  // rejected by validation
  }
}

bool Overlap(const void* a, const void* b, size_t bytes) {
  auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return bytes > 0 && x < y + bytes && y < x + bytes;
}

}  // namespace

int GossipCycleLength(int nranks) {
  int length = 0;
  while ((1ll << length) < nranks) ++length;
  return length;
}

std::vector<int> GossipRankOrder(int nranks, bool rotate, uint64_t seed, uint64_t cycle) {
  std::vector<int> order(nranks);
  for (int i = 0; i < nranks; ++i) order[i] = i;
  if (!rotate) return order;
  uint64_t state = seed ^ SplitMix64(&cycle);
  for (int i = nranks - 1; i > 0; --i) {
    // Modulo bias is < 2^-32 for any realistic nranks and the same on every rank.
    int j = static_cast<int>(SplitMix64(&state) % static_cast<uint64_t>(i + 1));
    std::swap(order[i], order[j]);
  }
  return order;
}

GossipPartners GossipPartnersAt(const chorusGossipState_t& state, int nranks, int rank) {
  GossipPartners partners;
  const int length = GossipCycleLength(nranks);
  if (length == 0) return partners;
  const int h = static_cast<int>(state.step % static_cast<uint64_t>(length));
  const uint64_t cycle = state.step / static_cast<uint64_t>(length);
  const std::vector<int> order = GossipRankOrder(nranks, state.rotate != 0, state.seed, cycle);
  int position = 0;
  while (order[position] != rank) ++position;
  const int distance = 1 << h;
  if (state.partner == chorusGossipCube) {
    const int other = position ^ distance;
    if (other >= nranks) return partners;
    partners.send_to = partners.recv_from = order[other];
  } else {
    partners.send_to = order[(position - distance % nranks + nranks) % nranks];
    partners.recv_from = order[(position + distance) % nranks];
  }
  partners.has_partner = true;
  return partners;
}

Status Gossip(const void* sendbuff, void* recvbuff, size_t count, DataType dtype, chorusGossipState_t* state,
              chorusComm* comm, chorusStream* stream) {
  if (!IsValidDataType(dtype) || !IsFloatingType(dtype)) {
    return InvalidArgument("datatype ", static_cast<int>(dtype), " is not a floating type (fp16, bf16, fp32, fp64)");
  }
  if (state == nullptr) return InvalidArgument("state is NULL");
  // The caller's struct may hold any integer there (C stores one freely):
  // read it as an integer, and use it as the enum only once it is valid.
  std::underlying_type_t<chorusGossipPartner_t> partner = 0;
  static_assert(sizeof(partner) == sizeof(state->partner));
  std::memcpy(&partner, &state->partner, sizeof(partner));
  if (partner != chorusGossipCube && partner != chorusGossipDissemination) {
    return InvalidArgument("unknown gossip partner rule ", static_cast<long long>(partner));
  }
  const size_t elem = DataTypeSize(dtype);
  if (count > SIZE_MAX / elem) return InvalidArgument("count ", count, " overflows the address space");
  const size_t bytes = count * elem;
  if (count > 0 && (sendbuff == nullptr || recvbuff == nullptr)) {
    return InvalidArgument("sendbuff and recvbuff must not be NULL with count ", count);
  }
  if (sendbuff != recvbuff && Overlap(sendbuff, recvbuff, bytes)) {
    return InvalidArgument("sendbuff and recvbuff overlap but the call is not in place");
  }
  if (count > 0) {
    // The average of the two models is taken on the CPU, in the user's
    // buffers. Refused before the step advances: a refused call did nothing.
    CHORUS_RETURN_IF_ERROR(RequireCpuMemory(*comm->impl, "sendbuff", sendbuff, "gossip averaging"));
    CHORUS_RETURN_IF_ERROR(RequireCpuMemory(*comm->impl, "recvbuff", recvbuff, "gossip averaging"));
  }
  const GossipPartners partners = GossipPartnersAt(*state, comm->impl->nranks(), comm->impl->rank());
  ++state->step;  // every rank advances, with or without a partner
  if (count == 0) return Status::Ok();

  StagedCall call(comm, stream);
  if (!partners.has_partner) {
    if (sendbuff == recvbuff) return Status::Ok();
    return call.After([=] { std::memcpy(recvbuff, sendbuff, bytes); });
  }
  auto theirs = std::make_shared<std::vector<uint8_t>>(bytes);
  Operation send, recv;
  send.kind = Operation::Kind::kSend;
  send.peer = partners.send_to;
  send.bytes = bytes;
  send.dtype = dtype;
  send.send = sendbuff;
  recv.kind = Operation::Kind::kRecv;
  recv.peer = partners.recv_from;
  recv.bytes = bytes;
  recv.dtype = dtype;
  recv.recv = theirs->data();
  CHORUS_RETURN_IF_ERROR(call.Launch({send, recv}));
  return call.After([=] { AverageTwo(recvbuff, sendbuff, theirs->data(), count, dtype); });
}

}  // namespace chorus
