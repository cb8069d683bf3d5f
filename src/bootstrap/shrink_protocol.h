// Wire format of shrink (after the authenticated handshake, purpose
// kRendezvous, hello.rank = the joiner's old rank), little-endian:
//   joiner -> root : magic u32 "SHRK", old rank i32, old nranks i32
//   root -> joiner : result u32 (chorusResult_t), body length u64, body
// A success body is the table: nonce (16 bytes), n u32, n old ranks u32 in
// ascending order, new root address length u32, address bytes. Otherwise the
// body is the root's error message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"
#include "bootstrap/shrink.h"
#include "transports/socket/socket.h"

namespace chorus::shrink {

constexpr uint32_t kJoinMagic = 0x4b524853;  // "SHRK"
constexpr size_t kJoinBytes = 12;
constexpr size_t kReplyHeaderBytes = 12;
constexpr size_t kNonceBytes = 16;
constexpr uint64_t kMaxBodyBytes = 1 << 20;
// How long one connection attempt to a listener may take before its rank is
// counted as unreachable (a live process's kernel answers at once).
constexpr int kProbeWindowMs = 2000;

struct Table {
  uint8_t nonce[kNonceBytes] = {};
  std::vector<int> survivors;
  std::string root_address;
};

std::string EncodeTable(const Table& table);
Status DecodeTable(const std::string& body, int old_nranks, Table* table);

// The new communicator's secret: SipHash-128 of the nonce keyed by the old
// secret, so only members of the old communicator can derive it.
void DeriveSecret(const uint8_t old_secret[16], const uint8_t nonce[kNonceBytes], uint8_t out[16]);

// One connection attempt, no retry: the listener has existed since the
// communicator was created, so a refusal means its rank is gone. `*alive`
// tells which; `connected` holds the connection when alive.
Status Probe(const std::string& address, Deadline deadline, bool* alive, Socket* connected);

// Sends a reply (header then body) before `deadline`.
Status SendReply(const Socket& socket, chorusResult_t code, const std::string& body, Deadline deadline);

// The root's side: `endpoint.rank` found every lower rank dead.
Status ServeAsRoot(RecoveryEndpoint& endpoint, Deadline gather_deadline, Deadline deadline, ShrinkOutcome* outcome);

}  // namespace chorus::shrink
