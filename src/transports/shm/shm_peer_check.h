// The pure checks of what a same-host peer announces: its shm address (from
// the rendezvous blob) and the header of its segment (written by the peer).
// Split from ShmTransport::MapPeer so that they can be tested and fuzzed
// without mapping anything.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "transports/shm/shm_layout.h"

namespace chorus {
namespace shm {

struct PeerAddress {
  pid_t pid = 0;
  size_t ring_bytes = 0;
  std::string name;
  std::string host;
};

// "shm1 <pid> <ring bytes> <segment name> <host identity>"; false when
// malformed (no pid, a name outside /chorus-shm-*, no host).
bool ParsePeerAddress(const std::string& address, PeerAddress* parsed);

// The largest ring a peer may announce: CHORUS_SHM_RING_BYTES's maximum. The
// bound keeps SegmentBytes(nranks, ring_bytes) from overflowing for any
// nranks, so the segment we map is as large as the ring offsets we use.
constexpr size_t kMaxAnnouncedRingBytes = size_t{1} << 30;
// Whether a peer's announced ring size is one we can map and use: a
// multiple of kCacheLine that holds two full records, at most
// kMaxAnnouncedRingBytes.
bool RingBytesValid(size_t ring_bytes);

// Whether the segment header of rank `owner_rank` is one of this layout, for
// `nranks` ranks, made by `address`'s process with its ring size, and
// proves the communicator secret.
bool SegmentHeaderValid(const SegmentHeader& theirs, const PeerAddress& address, int nranks, int owner_rank,
                        const uint8_t secret[16]);

}  // namespace shm
}  // namespace chorus
