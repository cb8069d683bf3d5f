// Wire format between a rank and the rendezvous root (after the
// authenticated handshake), little-endian:
//   rank -> root : magic u32, rank i32, nranks i32, blob length u32, blob
//   root -> rank : result u32 (chorusResult_t), body length u64, body
// On success the body is every rank's blob in rank order, each as length
// u32 then bytes; otherwise it is an error message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace chorus::rendezvous {

constexpr uint32_t kRequestMagic = 0x5a445652;  // "RVDZ"
constexpr size_t kMaxBlobBytes = 64 * 1024;
constexpr size_t kRequestHeaderBytes = 16;
constexpr size_t kReplyHeaderBytes = 12;
// How long one connection may take to authenticate and send its request,
// and to take its reply. Connections authenticate concurrently
// (HandshakeAcceptor), so a silent stranger delays no member; this only
// bounds how long it holds a descriptor.
constexpr int kPerConnectionTimeoutMs = 5000;

inline void PutU32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline void PutU64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline uint32_t GetU32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
inline uint64_t GetU64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Largest valid success body for `nranks` ranks (bounds what a rank allocates).
inline uint64_t MaxTableBytes(int nranks) { return static_cast<uint64_t>(nranks) * (4 + kMaxBlobBytes); }
// Longest error message a rank takes from the root.
constexpr uint64_t kMaxErrorBytes = 64 * 1024;

// The pure parsing steps of both sides (rendezvous_protocol.cc), apart from
// the sockets so that they can be tested and fuzzed on bytes alone.

// Root side, the acceptor's framing: how many more bytes the request whose
// first bytes are `received` needs (its header, then the blob the header
// announces); fails on a bad magic or an oversized blob.
Status FrameRequest(const std::string& received, size_t* more);
// Rank side: the reply header from the root (`from` names it in errors).
// `*code` is a chorusResult_t, `*body_bytes` at most what `nranks` ranks'
// table (or an error message) may hold.
Status ParseReplyHeader(const uint8_t header[kReplyHeaderBytes], int nranks, const std::string& from, uint32_t* code,
                        uint64_t* body_bytes);
// Rank side: the success body, every rank's blob in rank order.
Status ParseTable(const std::string& body, int nranks, std::vector<std::string>* blobs);

}  // namespace chorus::rendezvous
