// PeerInfo: what each rank tells the others at the rendezvous — its host
// identity and one address per transport.
#pragma once

#include <string>

#include "base/status.h"

namespace chorus {

struct PeerInfo {
  std::string host;         // HostIdentity(): host, boot and network namespace
  std::string tcp_address;
  std::string shm_address;  // empty when shared memory is off on that rank

  std::string Encode() const;
  static Status Decode(const std::string& blob, PeerInfo* out);
};

}  // namespace chorus
