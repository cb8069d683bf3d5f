#include "core/transport_mux.h"

#include <algorithm>
#include <thread>
#include <utility>

namespace chorus {

Status TransportMux::Create(std::vector<std::unique_ptr<Transport>> transports, int rank, int nranks,
                            std::unique_ptr<TransportMux>* out) {
  std::vector<int> routes(nranks, -1);
  for (int peer = 0; peer < nranks; ++peer) {
    if (peer == rank) continue;
    for (size_t t = 0; t < transports.size() && routes[peer] < 0; ++t) {
      if (transports[t]->endpoint(peer) != nullptr) routes[peer] = static_cast<int>(t);
    }
    if (routes[peer] < 0) return InternalError("rank ", rank, ": no transport reaches peer ", peer);
  }
  return Create(std::move(transports), routes, rank, nranks, out);
}

Status TransportMux::Create(std::vector<std::unique_ptr<Transport>> transports, const std::vector<int>& routes,
                            int rank, int nranks, std::unique_ptr<TransportMux>* out) {
  auto mux = std::unique_ptr<TransportMux>(new TransportMux());
  mux->transports_ = std::move(transports);
  mux->routes_.assign(nranks, nullptr);
  mux->route_names_.assign(nranks, "none");
  for (int peer = 0; peer < nranks; ++peer) {
    if (peer == rank) continue;
    const int route = peer < static_cast<int>(routes.size()) ? routes[peer] : -1;
    if (route < 0 || route >= static_cast<int>(mux->transports_.size())) {
      return InternalError("rank ", rank, ": no transport reaches peer ", peer);
    }
    Transport* transport = mux->transports_[route].get();
    Endpoint* endpoint = transport->endpoint(peer);
    if (endpoint == nullptr) {
      return InternalError("rank ", rank, ": the ", transport->name(), " transport chosen for peer ", peer,
                           " has no endpoint to it");
    }
    mux->routes_[peer] = endpoint;
    mux->route_names_[peer] = transport->name();
  }
  // Polled: every transport connected to some peer, in the transports'
  // order (the caller's preference first), whether the mux routes to it or
  // it carries an overlay's messages.
  std::vector<Transport*> ordered;
  for (auto& transport : mux->transports_) {
    for (int peer = 0; peer < nranks; ++peer) {
      if (peer != rank && transport->endpoint(peer) != nullptr) {
        ordered.push_back(transport.get());
        break;
      }
    }
  }
  mux->active_ = std::move(ordered);
  mux->capabilities_.combine_on_receive = !mux->active_.empty();
  for (Transport* transport : mux->active_) {
    const TransportCapabilities capabilities = transport->capabilities();
    mux->capabilities_.combine_on_receive &= capabilities.combine_on_receive;
    mux->capabilities_.shares_cores |= capabilities.shares_cores;
    mux->capabilities_.needs_memory_registration |= capabilities.needs_memory_registration;
    mux->capabilities_.takes_registered_memory |= capabilities.takes_registered_memory;
  }
  // A buffer may go to any peer: only the kinds every peer's endpoint takes
  // (the executor asks each endpoint anyway).
  mux->capabilities_.memory_kinds = kAllMemoryKinds;
  for (Endpoint* endpoint : mux->routes_) {
    if (endpoint != nullptr) mux->capabilities_.memory_kinds &= endpoint->memory_kinds();
  }
  *out = std::move(mux);
  return Status::Ok();
}

std::string TransportMux::LocalAddress() const {
  std::string text;
  for (const auto& transport : transports_) text += StrCat(text.empty() ? "" : " ", transport->LocalAddress());
  return text;
}

Status TransportMux::Connect(const std::vector<std::string>&, Deadline) {
  return InternalError("TransportMux is built from connected transports");
}

Status TransportMux::Progress(int timeout_ms) {
  if (active_.size() == 1) return active_[0]->Progress(timeout_ms);
  bool in_flight = false;
  for (Transport* transport : active_) {
    CHORUS_RETURN_IF_ERROR(transport->Progress(0));
    in_flight |= transport->InFlight();
  }
  if (timeout_ms == 0 || active_.empty()) return Status::Ok();
  if (in_flight) {
    // An overlay waits for something no carrier signals: the caller polls,
    // leaving the core to the peer it waits for where ranks share cores.
    if (capabilities_.shares_cores) std::this_thread::yield();
    return Status::Ok();
  }
  // Several transports and nothing to do: wait in the first (the fastest)
  // for a short slice so that the others are polled every millisecond.
  CHORUS_RETURN_IF_ERROR(active_[0]->Progress(1));
  for (size_t i = 1; i < active_.size(); ++i) CHORUS_RETURN_IF_ERROR(active_[i]->Progress(0));
  return Status::Ok();
}

void TransportMux::Wakeup() {
  for (auto& transport : transports_) transport->Wakeup();
}

void TransportMux::Shutdown() {
  for (auto& transport : transports_) transport->Shutdown();
}

void TransportMux::ShutdownWithNotice(const CloseNotice& notice) {
  for (auto& transport : transports_) transport->ShutdownWithNotice(notice);
}

bool TransportMux::ReceivedNotice(CloseNotice* notice) const {
  for (const auto& transport : transports_) {
    if (transport->ReceivedNotice(notice)) return true;
  }
  return false;
}

Status TransportMux::RegisterMemory(void* ptr, size_t bytes, MemoryKind kind, MemoryHandle* handle) {
  *handle = MemoryHandle();
  if (!capabilities_.needs_memory_registration && !capabilities_.takes_registered_memory) return Status::Ok();
  auto set = std::make_unique<MemoryHandleSet>();
  for (Transport* transport : active_) {
    const TransportCapabilities capabilities = transport->capabilities();
    // A kind a transport does not take is staged on its way there.
    if (!capabilities.needs_memory_registration && !capabilities.takes_registered_memory) continue;
    if (!Contains(capabilities.memory_kinds, kind)) continue;
    MemoryHandle one;
    Status status = transport->RegisterMemory(ptr, bytes, kind, &one);
    if (!status.ok()) {
      for (auto& [done, registered] : set->handles) const_cast<Transport*>(done)->DeregisterMemory(registered);
      return status;
    }
    set->handles.emplace_back(transport, one);
  }
  handle->set = set.release();
  return Status::Ok();
}

void TransportMux::DeregisterMemory(MemoryHandle handle) {
  if (handle.set == nullptr) return;
  for (auto& [transport, registered] : handle.set->handles) const_cast<Transport*>(transport)->DeregisterMemory(registered);
  delete handle.set;
}

const char* TransportMux::TransportNameFor(int peer) const {
  return peer >= 0 && peer < static_cast<int>(route_names_.size()) ? route_names_[peer] : "none";
}

}  // namespace chorus
