// Bootstrap: the unique id and the one-time rendezvous that lets every rank
// learn every other rank's transport address. After it, ranks talk only
// through their transports; later out-of-band needs (CommSplit) use the
// communicator's own collectives.
#pragma once

#include <cstdint>
#include <future>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"
#include "chorus/chorus.h"

namespace chorus {

struct UniqueIdContents {
  std::string root_address;  // "host:port" ("[v6addr]:port" for IPv6)
  uint8_t secret[16] = {};
  // Not encoded: the root listened before this id was handed out (an id from
  // a shrink's table), so a refused connection means it is gone.
  bool root_listening = false;
};

// Packs into the 128-byte id with a magic and checksum.
Status EncodeUniqueId(const UniqueIdContents& contents, chorusUniqueId* id);
// Rejects a corrupt id (bad magic, checksum, address) with InvalidArgument.
Status DecodeUniqueId(const chorusUniqueId& id, UniqueIdContents* contents);

// Makes a fresh secret and starts a root listener on the interface chosen by
// `ifname` (CHORUS_SOCKET_IFNAME syntax). A detached thread serves one
// rendezvous and exits when it is done or `timeout_ms` has passed.
Status StartRendezvousRoot(const std::string& ifname, int timeout_ms, UniqueIdContents* contents);

// As StartRendezvousRoot with a given secret (a shrunk communicator's,
// derived from its parent's): fills contents->root_address.
Status StartRendezvousRootWithSecret(const std::string& ifname, const uint8_t secret[16], int timeout_ms,
                                     UniqueIdContents* contents);

// As above but listening on a given "host:port" with a given secret
// (chorusCommInitFromEnv on rank 0). If `finished` is given it becomes ready
// when the root has answered every rank (or timed out), so that the process
// hosting the root can stay until the others have heard a failure.
Status StartRendezvousRootAt(const UniqueIdContents& contents, int timeout_ms,
                             std::shared_future<void>* finished = nullptr);

// Collective over the `nranks` ranks of one id: connects to the root,
// proves the secret, sends (rank, nranks, blob) and receives every rank's
// blob in rank order. Fails clearly on duplicate ranks, disagreeing nranks,
// a wrong secret, or the deadline.
Status Rendezvous(const UniqueIdContents& id, int rank, int nranks, const std::string& blob,
                  Deadline deadline, std::vector<std::string>* blobs);

}  // namespace chorus
