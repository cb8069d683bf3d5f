// PeerInfo: what each rank tells the others at the rendezvous — its host
// identity and a (transport name, address) pair for every transport it
// created, so that every rank derives the same routes (transport_registry.h).
#pragma once

#include <string>

#include "base/status.h"
#include "transports/transport_registry.h"

namespace chorus {

struct PeerInfo : PeerPublication {
  std::string Encode() const;
  // Rejects a malformed blob (truncated, trailing bytes, more than
  // kMaxPublishedAddresses pairs, an empty transport name).
  static Status Decode(const std::string& blob, PeerInfo* out);
};

constexpr size_t kMaxPublishedAddresses = 64;

}  // namespace chorus
