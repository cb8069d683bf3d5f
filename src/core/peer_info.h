// PeerInfo: what each rank tells the others at the rendezvous — its host
// identity, the NUMA node of its CPU binding, and a (transport name, address)
// pair for every transport it created, so that every rank derives the same
// routes (transport_registry.h).
#pragma once

#include <string>

#include "base/status.h"
#include "transports/transport_registry.h"

namespace chorus {

struct PeerInfo : PeerPublication {
  int numa_node = -1;  // NUMA node of the rank's CPU binding; -1: spans nodes or unknown

  std::string Encode() const;
  // Rejects a malformed blob (truncated, trailing bytes, more than
  // kMaxPublishedAddresses pairs, an empty transport name, a NUMA node
  // outside -1..2^20).
  static Status Decode(const std::string& blob, PeerInfo* out);
};

constexpr size_t kMaxPublishedAddresses = 64;

}  // namespace chorus
