// TransportMux: one Transport facade over several, routing each peer to the
// transport chosen for it (by the registry: the first of CHORUS_TRANSPORT's
// order that reaches it, e.g. shared memory for peers on this host, TCP for
// the rest). The executor sees a single transport and never chooses by name.
// An idle mux of several transports sleeps in poll(2) on every transport's
// wait fd (Transport::ArmWait), so a message on any wakes it at once.
#pragma once

#include <poll.h>

#include <memory>
#include <vector>

#include "transports/transport.h"

namespace chorus {

class TransportMux : public Transport {
 public:
  // `transports` in order of preference; each must be connected already.
  // Peer p goes to the first transport whose endpoint(p) is non-null.
  static Status Create(std::vector<std::unique_ptr<Transport>> transports, int rank, int nranks,
                       std::unique_ptr<TransportMux>* out);
  // Peer p goes to transports[routes[p]] (routes[rank] is ignored), whose
  // endpoint(p) must exist: the error names the peer and the transport.
  static Status Create(std::vector<std::unique_ptr<Transport>> transports, const std::vector<int>& routes, int rank,
                       int nranks, std::unique_ptr<TransportMux>* out);

  const char* name() const override { return "mux"; }
  // combine_on_receive when every peer's transport combines; the executor
  // asks each endpoint anyway, since endpoint(p) is the serving transport's.
  // shares_cores when any serving transport says so (the same-host ranks
  // share cores, whatever reaches the other hosts), and
  // needs_memory_registration when any serving transport needs it.
  TransportCapabilities capabilities() const override { return capabilities_; }
  std::string LocalAddress() const override;
  Status Connect(const std::vector<std::string>&, Deadline) override;
  Endpoint* endpoint(int peer) override { return peer >= 0 && peer < static_cast<int>(routes_.size()) ? routes_[peer] : nullptr; }
  Status Progress(int timeout_ms) override;
  void Wakeup() override;
  void Shutdown() override;
  // Tells the peers of every transport; a notice from any transport counts.
  void ShutdownWithNotice(const CloseNotice& notice) override;
  bool ReceivedNotice(CloseNotice* notice) const override;
  // Registers with every serving transport that needs or takes registered
  // memory of `kind`; the handle's `set` holds theirs (each finds its own
  // with MemoryHandle::For).
  Status RegisterMemory(void* ptr, size_t bytes, MemoryKind kind, MemoryHandle* handle) override;
  void DeregisterMemory(MemoryHandle handle) override;

  // Name of the transport serving `peer` (for logs).
  const char* TransportNameFor(int peer) const;

 private:
  std::vector<std::unique_ptr<Transport>> transports_;
  // Several active transports, nothing to do: looks at them all for a
  // while, then sleeps until any has work.
  Status WaitInAll(int timeout_ms);
  // One look at every transport (ArmWait, look only): *ready when one moved
  // something.
  Status LookAtAll(bool* ready);

  std::vector<Transport*> active_;      // transports serving at least one peer
  std::vector<pollfd> wait_fds_;        // WaitInAll's, one per active transport
  bool waitable_ = true;                // every active transport has a wait fd (until one has not)
  std::vector<Endpoint*> routes_;       // per peer
  std::vector<const char*> route_names_;
  TransportCapabilities capabilities_;
};

}  // namespace chorus
