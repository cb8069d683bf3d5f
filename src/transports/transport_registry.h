// The transport registry: what the core knows of transports. Each transport
// is one TransportDescriptor (name, preference, capabilities, its own
// CHORUS_* variables, how to create it, whether it reaches a peer); the
// built-in ones are listed in one table (transports/registry.cc), and a
// communicator may be given another table (tests add their own transports
// that way). The core creates, connects and routes transports through this
// header only, never through a concrete transport's.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "transports/transport.h"

namespace chorus {

namespace shm {
class ShmBoard;
}  // namespace shm

// The values of the transports' CHORUS_* variables for one communicator:
// read once from the environment at creation (so a split or shrink gets the
// same), with chorusConfig_t fields that map onto a variable (nSocks ->
// CHORUS_NSOCKS) set on top. Variables not captured read the environment.
class TransportVars {
 public:
  void Set(const std::string& name, std::string value);
  // The captured or set value, else EnvValue(name) (its default when unset).
  std::string Get(const char* name) const;

 private:
  std::vector<std::pair<std::string, std::string>> values_;
};

// One address a rank publishes at the rendezvous.
struct PublishedAddress {
  std::string transport;  // descriptor name
  std::string address;    // Transport::LocalAddress()
};

// What a rank tells the others: its host identity (HostIdentity()) and an
// address for each transport it created.
struct PeerPublication {
  std::string host;
  std::vector<PublishedAddress> addresses;
  // The address published for `transport`, or null.
  const std::string* AddressFor(const std::string& transport) const;
};

struct TransportDescriptor {
  const char* name;
  // Another name CHORUS_TRANSPORT accepts for it (ibverbs: ib), or null.
  const char* alias;
  // `auto` tries transports in increasing preference for each peer.
  int preference;
  // Left out of `auto`: used only where CHORUS_TRANSPORT names it. For a
  // transport that would cost every communicator (UCX: a context, a worker
  // and a 4 MiB /dev/shm FIFO each) while auto's others already reach every
  // peer it does.
  bool explicit_only;
  // What the transport can do before it is created (same_host_only decides
  // reachability by default); the created transport reports the rest.
  TransportCapabilities capabilities;
  // Its CHORUS_* variables (declared in base/config.cc's table with their
  // help), null-terminated; captured into TransportVars at creation.
  const char* const* variables;
  // Checks its variables (bad input fails communicator creation with a
  // clear message before anything is created). May be null.
  Status (*check)(const TransportVars& vars);
  // Creates this rank's transport (listener or segment), not yet connected.
  Status (*create)(const TransportDescriptor& descriptor, const TransportOptions& options, const TransportVars& vars,
                   std::unique_ptr<Transport>* out);
  // Whether `self` can talk to `peer` with it; must be symmetric, since both
  // ranks decide alone. Null: both published an address for it and, for a
  // same_host_only transport, their host identities are equal.
  bool (*reaches)(const TransportDescriptor& descriptor, const PeerPublication& self, const PeerPublication& peer);
  // Whether create, given `options`, will place the transport by the host
  // topology's I/O devices (TCP choosing the NIC nearest to the rank): the
  // core then has discovery scan for them, which is most of its time. May
  // be null (never).
  bool (*uses_io_devices)(const TransportOptions& options);
  // An overlay carries no bytes of its own: its endpoint to a peer wraps
  // the endpoint of the transport chosen for that peer among the others
  // (Transport::SetCarriers) and adds a way of moving some memory (CUDA IPC:
  // device buffers), passing the rest to the carrier. Routes are chosen
  // among the others; a peer an overlay reaches is then routed to it.
  bool overlay;
  // Whether create can work on this machine at all (CUDA IPC: a GPU is
  // present). False: left out of a selection of several quietly. May be
  // null (always).
  bool (*available)(const TransportDescriptor& descriptor);
  // Handed back to create and reaches through the descriptor (e.g. the
  // fabric of a test transport); the built-in ones need none.
  void* context;
};

// Default reachability (TransportDescriptor::reaches == null).
bool ReachesByDefault(const TransportDescriptor& descriptor, const PeerPublication& self,
                      const PeerPublication& peer);
bool Reaches(const TransportDescriptor& descriptor, const PeerPublication& self, const PeerPublication& peer);

// An immutable list of descriptors.
class TransportRegistry {
 public:
  explicit TransportRegistry(std::vector<TransportDescriptor> descriptors);

  const std::vector<TransportDescriptor>& descriptors() const { return descriptors_; }
  const TransportDescriptor* Find(const std::string& name) const;
  // "shm, tcp": for error messages.
  std::string KnownNames() const;

  // CHORUS_TRANSPORT: "auto" (every transport but the explicit_only ones,
  // by preference, the best per peer), one name (only that one), or an ordered comma-separated list
  // ("shm,tcp": for each peer the first that reaches it). Unknown or
  // repeated names, an empty entry, or "auto" inside a list are errors
  // naming the known transports.
  Status ParseSelection(const std::string& text, std::vector<const TransportDescriptor*>* order) const;

  // Captures every descriptor's variables from the environment and checks
  // them (the first bad one fails).
  Status CaptureVars(TransportVars* vars) const;

 private:
  std::vector<TransportDescriptor> descriptors_;
};

// The built-in transports (transports/registry.cc). Immutable after its
// first use, so it is shared process-wide without being mutable state.
const TransportRegistry& BuiltinTransports();

// For every rank of `peers`, the index in `order` of the first transport
// that reaches it from `self_rank` (-1: none; own rank: -1). Overlays are
// never routes: they ride on the transport chosen here.
std::vector<int> ChooseTransports(const std::vector<const TransportDescriptor*>& order,
                                  const std::vector<PeerPublication>& peers, int self_rank);

// Every pair of ranks has a transport in `order` that is not an overlay (every rank checks the
// whole table, so that all fail alike instead of some waiting for the
// others at their deadline). The error names the first pair, both hosts
// and the transports tried.
Status CheckEveryPairReachable(const std::vector<const TransportDescriptor*>& order,
                               const std::vector<PeerPublication>& peers, const std::string& selection_text);

}  // namespace chorus
