// ShmTransport's per-peer state, shared by shm_transport.cc and
// shm_connect.cc.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "transports/shm/shm_channel.h"
#include "transports/shm/shm_peer_heap.h"
#include "transports/shm/shm_segment.h"
#include "transports/shm/shm_transport.h"

namespace chorus {

class ShmTransport::ShmEndpoint : public Endpoint {
 public:
  ShmEndpoint(ShmTransport* transport, int peer) : transport_(transport), peer_(peer) {}
  int peer() const override { return peer_; }
  Status PostSend(TransferRequest* request) override { return transport_->Post(peer_, request, true); }
  Status PostRecv(TransferRequest* request) override { return transport_->Post(peer_, request, false); }
  bool combine_on_receive() const override { return true; }

 private:
  ShmTransport* transport_;
  int peer_;
};

struct ShmTransport::Peer {
  Peer(ShmTransport* transport, int rank) : endpoint(transport, rank) {}
  bool idle() const { return outbound->idle() && inbound->idle(); }
  shm::SegmentHeader* header() const { return static_cast<shm::SegmentHeader*>(segment->data()); }

  ShmEndpoint endpoint;
  pid_t pid = 0;
  size_t ring_bytes = 0;  // of the peer's segment
  std::string label;      // "peer 3 (pid 1234)"
  std::unique_ptr<shm::ShmSegment> segment;
  shm::PullMethod pull_method = shm::PullMethod::kNone;  // how we read its large messages
  std::unique_ptr<shm::PeerHeapView> heap;                // its shared heap, mapped (kHeap)
  bool maps_our_heap = false;                             // it pulls from our heap blocks
  std::unique_ptr<shm::ShmOutbound> outbound;
  std::unique_ptr<shm::ShmInbound> inbound;
};

}  // namespace chorus
