// Helpers shared by the shm transport tests.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/transports/transport_test_util.h"
#include "transports/shm/shm_transport.h"

namespace chorus {
namespace shm_test {

using transport_test::ForEachRank;
using transport_test::kTestTimeoutMs;
using transport_test::Pattern;
using transport_test::WaitAll;

inline TransportOptions Options(int rank, int nranks, uint8_t secret_seed = 1) {
  TransportOptions options;
  options.rank = rank;
  options.nranks = nranks;
  for (int i = 0; i < 16; ++i) options.secret[i] = static_cast<uint8_t>(5 * i + secret_seed);
  return options;
}

inline void FillPattern(std::vector<uint8_t>* buffer, int from, int to, size_t salt) {
  for (size_t i = 0; i < buffer->size(); ++i) (*buffer)[i] = Pattern(from, to, i + salt);
}

// Number of bytes that differ from the pattern.
inline size_t CountWrong(const std::vector<uint8_t>& buffer, int from, int to, size_t salt) {
  size_t wrong = 0;
  for (size_t i = 0; i < buffer.size(); ++i) wrong += buffer[i] != Pattern(from, to, i + salt);
  return wrong;
}

inline TransferRequest Request(void* buffer, size_t bytes, uint64_t tag) {
  TransferRequest request;
  request.buffer = buffer;
  request.bytes = bytes;
  request.tag = tag;
  return request;
}

// What ExchangeWithEveryPeer moved, for the callers' checks of the path.
struct ExchangeCounts {
  size_t messages = 0;  // received from all peers (as many were sent)
  size_t large = 0;     // of those, the ones of shm::kSingleCopyThreshold bytes or more
};

// `rank` sends every size to every other rank and receives the same from
// each (tag first_tag + size index), all in flight at once, then checks
// every byte it received. Returns "" or what went wrong; used by rank
// threads and rank processes alike.
inline std::string ExchangeWithEveryPeer(Transport* transport, int rank, int nranks, const std::vector<size_t>& sizes,
                                         uint64_t first_tag, ExchangeCounts* counts) {
  std::vector<std::vector<uint8_t>> sends, recvs;
  std::vector<TransferRequest> requests;
  requests.reserve(2 * nranks * sizes.size());  // posted requests must not move
  std::vector<TransferRequest*> pending;
  *counts = ExchangeCounts();
  for (int peer = 0; peer < nranks; ++peer) {
    if (peer == rank) continue;
    for (size_t k = 0; k < sizes.size(); ++k) {
      sends.emplace_back(sizes[k]);
      FillPattern(&sends.back(), rank, peer, k);
      recvs.emplace_back(sizes[k], 0xee);
      counts->large += sizes[k] >= shm::kSingleCopyThreshold;
      requests.push_back(Request(sends.back().data(), sizes[k], first_tag + k));
      if (!transport->endpoint(peer)->PostSend(&requests.back()).ok()) return "PostSend failed";
      pending.push_back(&requests.back());
      requests.push_back(Request(recvs.back().data(), sizes[k], first_tag + k));
      if (!transport->endpoint(peer)->PostRecv(&requests.back()).ok()) return "PostRecv failed";
      pending.push_back(&requests.back());
    }
  }
  Status status = WaitAll(transport, pending);
  if (!status.ok()) return status.message();
  for (int peer = 0; peer < nranks; ++peer) {
    if (peer == rank) continue;
    for (size_t k = 0; k < sizes.size(); ++k, ++counts->messages) {
      const size_t wrong = CountWrong(recvs[counts->messages], peer, rank, k);
      if (wrong != 0) return StrCat(wrong, " wrong bytes from ", peer, " in message of ", sizes[k]);
    }
  }
  return "";
}

// "/chorus-shm-..." from an address, or "" when there is none.
inline std::string SegmentName(const std::string& address) {
  const size_t at = address.find("/chorus-shm-");
  if (at == std::string::npos) return "";
  return address.substr(at, address.find(' ', at) - at);
}

inline bool SegmentExists(const std::string& name) { return !name.empty() && std::ifstream("/dev/shm" + name).good(); }

// A ReceiveCombiner for tests: result[i] = base[i] + incoming[i] (bytes,
// wrapping), recording the pieces it is handed. Not movable: the combiner
// points at it.
class AddingCombiner {
 public:
  AddingCombiner(size_t bytes, uint8_t seed) : base_(bytes), result_(bytes, 0xee), sink_(bytes + 1, 0x5a) {
    for (size_t i = 0; i < bytes; ++i) base_[i] = static_cast<uint8_t>(seed + i * 5);
    combiner_.fn = &AddingCombiner::Combine;
    combiner_.context = this;
  }
  AddingCombiner(const AddingCombiner&) = delete;
  AddingCombiner& operator=(const AddingCombiner&) = delete;

  // A combining receive of the whole message; its `buffer` is a sink that
  // must stay untouched.
  TransferRequest Receive(uint64_t tag) {
    TransferRequest request;
    request.buffer = sink_.data();
    request.bytes = base_.size();
    request.tag = tag;
    request.combine = &combiner_;
    return request;
  }
  size_t pieces() const { return offsets_.size(); }
  bool untouched() const { return pieces() == 0 && result_ == std::vector<uint8_t>(base_.size(), 0xee); }

  // "" when result = base + the pattern `from` sent `to` with `salt`, handed
  // over in pieces that tile the message in order, each at most `max_piece`
  // bytes and all but the last a multiple of kCombinePieceAlign.
  std::string Check(int from, int to, size_t salt, size_t max_piece) const {
    size_t expected_offset = 0;
    for (size_t k = 0; k < offsets_.size(); ++k) {
      if (offsets_[k] != expected_offset) {
        return StrCat("piece ", k, " at ", offsets_[k], ", expected ", expected_offset);
      }
      if (lengths_[k] == 0 || lengths_[k] > max_piece) return StrCat("piece ", k, " of ", lengths_[k], " bytes");
      expected_offset += lengths_[k];
      if (expected_offset != base_.size() && lengths_[k] % kCombinePieceAlign != 0) {
        return StrCat("unaligned piece ", k, " of ", lengths_[k], " bytes");
      }
    }
    if (expected_offset != base_.size()) {
      return StrCat("pieces cover ", expected_offset, " of ", base_.size(), " bytes");
    }
    for (size_t i = 0; i < base_.size(); ++i) {
      if (result_[i] != static_cast<uint8_t>(base_[i] + Pattern(from, to, i + salt))) return StrCat("wrong byte ", i);
    }
    for (uint8_t byte : sink_) {
      if (byte != 0x5a) return "the transport wrote the receive buffer";
    }
    return "";
  }

 private:
  static void Combine(void* context, size_t offset, const void* incoming, size_t bytes) {
    auto* self = static_cast<AddingCombiner*>(context);
    self->offsets_.push_back(offset);
    self->lengths_.push_back(bytes);
    const auto* in = static_cast<const uint8_t*>(incoming);
    for (size_t i = 0; i < bytes && offset + i < self->base_.size(); ++i) {
      self->result_[offset + i] = static_cast<uint8_t>(self->base_[offset + i] + in[i]);
    }
  }

  std::vector<uint8_t> base_, result_, sink_;
  std::vector<size_t> offsets_, lengths_;
  ReceiveCombiner combiner_;
};

// The largest piece a combining receive of `bytes` may be handed.
inline size_t MaxCombinePiece(size_t bytes, shm::PullMethod method, bool pulled, size_t piece_bytes) {
  if (!pulled || bytes < shm::kSingleCopyThreshold) return shm::kMaxRecordPayload;
  return method == shm::PullMethod::kCma ? piece_bytes : bytes;
}

}  // namespace shm_test
}  // namespace chorus
