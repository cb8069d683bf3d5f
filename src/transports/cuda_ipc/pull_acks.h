// PullAcks: how a CUDA IPC receiver tells a sender that it has pulled a
// message out of the sender's device buffer, so the sender may reuse it.
// Each rank owns a small shared-memory segment with one counter per peer:
// rank r writes, into the segment of sender s, how many of s's pulled
// messages it has finished. Acknowledgements cannot travel on the carrier:
// a carrier matches messages in posting order, and neither side could tell
// where in the other's stream an acknowledgement falls.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"
#include "transports/shm/shm_segment.h"

namespace chorus {

class PullAcks {
 public:
  // Creates this rank's segment (named like the shm transport's, so that
  // its clean-up of dead ranks' segments covers it).
  static Status Create(const uint8_t secret[16], int rank, int nranks, std::unique_ptr<PullAcks>* out);

  // For the address: the segment's name.
  const std::string& name() const { return own_->name(); }

  // Maps `peer`'s segment (checked: its size, rank and a MAC of the
  // communicator's secret) and counts this rank among those that mapped it.
  Status OpenPeer(int peer, const std::string& name);
  // Waits until `peers` ranks have mapped this rank's segment, then removes
  // its name (the mappings stay).
  Status AwaitMapped(int peers, Deadline deadline);

  // Sender side: how many of this rank's pulled messages `peer` finished.
  uint64_t Finished(int peer) const;
  // Receiver side: tells `peer` that its pulled messages up to `sequence`
  // are finished.
  void Acknowledge(int peer, uint64_t sequence);

  // The segment's first cache line (pull_acks.cc).
  struct Header;

 private:
  PullAcks(const uint8_t secret[16], int rank, int nranks);
  static size_t Bytes(int nranks);
  std::atomic<uint64_t>* Slot(void* segment, int rank) const;

  uint8_t secret_[16];
  int rank_;
  int nranks_;
  std::unique_ptr<shm::ShmSegment> own_;
  std::vector<std::unique_ptr<shm::ShmSegment>> peers_;  // by rank; null where not mapped
};

}  // namespace chorus
