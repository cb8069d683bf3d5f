// What a same-host peer hands the shm transport: its address from the
// rendezvous blob (ParsePeerAddress, RingBytesValid), its segment header
// (SegmentHeaderValid, raw and with a valid owner MAC), and the records it
// writes into our ring, consumed by ShmInbound into fuzzed posted receives
// (plain and combining, copying through the ring or pulling from a process).
#include <unistd.h>

#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "transports/shm/shm_channel.h"
#include "transports/shm/shm_peer_check.h"
#include "transports/shm/shm_segment.h"

namespace chorus {
namespace shm {
namespace {

constexpr size_t kRingBytes = 64 * kCacheLine;
constexpr size_t kMaxRequests = 4;
constexpr size_t kMaxMessageBytes = 3 * kRingBytes;

void FuzzAddress(FuzzedDataProvider& input) {
  const int nranks = input.ConsumeIntegralInRange<int>(1, 1 << 20);
  PeerAddress address;
  if (!ParsePeerAddress(input.ConsumeRemainingBytesAsString(), &address)) return;
  FUZZ_CHECK(address.pid > 0 && !address.host.empty());
  if (!RingBytesValid(address.ring_bytes)) return;
  // The segment we would map holds every ring we would address.
  const size_t bytes = SegmentBytes(nranks, address.ring_bytes);
  size_t rings = 0;
  FUZZ_CHECK(!__builtin_mul_overflow(static_cast<size_t>(nranks), RingStride(address.ring_bytes), &rings));
  FUZZ_CHECK(bytes == sizeof(SegmentHeader) + rings + sizeof(BoardArea));
}

void FuzzHeader(FuzzedDataProvider& input) {
  uint8_t secret[16] = {};
  input.ConsumeData(secret, sizeof(secret));
  const bool sealed = input.ConsumeBool();
  const int nranks = input.ConsumeIntegralInRange<int>(1, 8);
  const int owner_rank = input.ConsumeIntegralInRange<int>(0, 8);
  PeerAddress address;
  address.pid = input.ConsumeIntegralInRange<pid_t>(1, 4);
  address.ring_bytes = kRingBytes;
  auto header = std::make_unique<SegmentHeader>();
  // The bytes the owner writes before publishing (the rest are atomics).
  const size_t written = offsetof(SegmentHeader, futex_word);
  std::vector<uint8_t> bytes = input.ConsumeBytes<uint8_t>(written);
  if (!bytes.empty()) std::memcpy(static_cast<void*>(header.get()), bytes.data(), bytes.size());
  if (sealed) SegmentMac(secret, "shm-owner", header->nonce, owner_rank, header->owner_mac);
  const bool valid = SegmentHeaderValid(*header, address, nranks, owner_rank, secret);
  if (valid) FUZZ_CHECK(sealed || bytes.size() == written);
  if (sealed) {
    FUZZ_CHECK(valid == (header->magic == kSegmentMagic && header->version == kLayoutVersion &&
                         header->nranks == static_cast<uint32_t>(nranks) && header->owner_rank == owner_rank &&
                         header->owner_pid == address.pid && header->ring_bytes == kRingBytes));
  }
}

struct CombinedMessage {
  std::vector<uint8_t>* buffer;
};

// A combiner that copies and checks what the transport promises: pieces in
// order, inside the message, cut at multiples of kCombinePieceAlign.
void CombinePiece(void* context, size_t offset, const void* data, size_t bytes) {
  auto* message = static_cast<CombinedMessage*>(context);
  FUZZ_CHECK(offset % kCombinePieceAlign == 0);
  FUZZ_CHECK(offset + bytes <= message->buffer->size());
  std::memcpy(message->buffer->data() + offset, data, bytes);
}

void FuzzRing(FuzzedDataProvider& input) {
  const PullMethod method = input.ConsumeBool() ? PullMethod::kCma : PullMethod::kNone;
  const size_t count = input.ConsumeIntegralInRange<size_t>(1, kMaxRequests);
  std::vector<std::vector<uint8_t>> buffers(count);
  std::vector<CombinedMessage> contexts(count);
  std::vector<ReceiveCombiner> combiners(count);
  std::vector<TransferRequest> requests(count);
  for (size_t i = 0; i < count; ++i) {
    requests[i].tag = input.ConsumeIntegralInRange<uint64_t>(0, 3);
    requests[i].bytes = input.ConsumeIntegralInRange<size_t>(0, kMaxMessageBytes);
    buffers[i].resize(requests[i].bytes);
    requests[i].buffer = buffers[i].data();
    if (input.ConsumeBool()) {
      contexts[i].buffer = &buffers[i];
      combiners[i].fn = CombinePiece;
      combiners[i].context = &contexts[i];
      requests[i].combine = &combiners[i];
    }
  }
  const uint64_t head = input.ConsumeBool() ? input.ConsumeIntegral<uint64_t>()
                                            : kCacheLine * input.ConsumeIntegralInRange<uint64_t>(0, 2 * kRingBytes / kCacheLine);
  std::vector<uint8_t> ring_bytes = input.ConsumeRemainingBytes<uint8_t>();
  ring_bytes.resize(kRingBytes);

  auto control = std::make_unique<RingControl>();
  auto sender = std::make_unique<SegmentHeader>();
  control->head.store(head);
  struct alignas(kCacheLine) Line {
    uint8_t bytes[kCacheLine];
  };
  std::vector<Line> ring_lines(kRingBytes / kCacheLine);
  auto* ring = reinterpret_cast<uint8_t*>(ring_lines.data());
  std::memcpy(ring, ring_bytes.data(), kRingBytes);
  std::vector<uint8_t> bounce_bytes(4 * kCombinePieceAlign);
  BounceBuffer bounce{bounce_bytes.data(), bounce_bytes.size()};
  ShmStats stats;
  ShmInbound inbound(control.get(), ring, kRingBytes, sender.get(), method, ::getpid(), "peer 1 (fuzz)",
                     &stats, &bounce, /*heap=*/nullptr);
  for (TransferRequest& request : requests) inbound.Push(&request);

  Status status;
  for (int round = 0; round < 16 && status.ok() && !inbound.idle(); ++round) {
    bool progressed = false;
    status = inbound.Pump(&progressed);
    if (!progressed) break;
  }
  // The consumer never passes what the sender published.
  FUZZ_CHECK(control->tail.load() <= head);
  FUZZ_CHECK(control->pulling.load() == 0);
}

}  // namespace
}  // namespace shm
}  // namespace chorus

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider input(data, size);
  switch (input.ConsumeIntegralInRange<int>(0, 2)) {
    case 0:
      chorus::shm::FuzzAddress(input);
      break;
    case 1:
      chorus::shm::FuzzHeader(input);
      break;
    default:
      chorus::shm::FuzzRing(input);
      break;
  }
  return 0;
}
