#include "transports/shm/shm_peer_check.h"

#include <cstring>
#include <sstream>

#include "transports/shm/shm_segment.h"

namespace chorus {
namespace shm {

bool ParsePeerAddress(const std::string& address, PeerAddress* parsed) {
  *parsed = PeerAddress();  // getline at the end leaves `host` as it was
  std::istringstream in(address);
  std::string version;
  if (!(in >> version >> parsed->pid >> parsed->ring_bytes >> parsed->name) || version != "shm1") return false;
  in >> std::ws;
  std::getline(in, parsed->host);
  return parsed->pid > 0 && parsed->name.rfind("/chorus-shm-", 0) == 0 && !parsed->host.empty();
}

bool RingBytesValid(size_t ring_bytes) {
  return ring_bytes % kCacheLine == 0 && ring_bytes >= 2 * kMaxRecordPayload && ring_bytes <= kMaxAnnouncedRingBytes;
}

bool SegmentHeaderValid(const SegmentHeader& theirs, const PeerAddress& address, int nranks, int owner_rank,
                        const uint8_t secret[16]) {
  uint8_t expected_mac[kMacBytes];
  SegmentMac(secret, "shm-owner", theirs.nonce, owner_rank, expected_mac);
  return theirs.magic == kSegmentMagic && theirs.version == kLayoutVersion &&
         theirs.nranks == static_cast<uint32_t>(nranks) && theirs.owner_rank == owner_rank &&
         theirs.owner_pid == address.pid && theirs.ring_bytes == address.ring_bytes &&
         std::memcmp(theirs.owner_mac, expected_mac, sizeof(expected_mac)) == 0;
}

}  // namespace shm
}  // namespace chorus
