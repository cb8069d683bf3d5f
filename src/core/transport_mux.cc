#include "core/transport_mux.h"

#include <poll.h>

#include <algorithm>
#include <thread>
#include <utility>

#include "base/spin_wait.h"
#include "transports/shm/shm_wait_policy.h"

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
  mux->wait_fds_.resize(mux->active_.size());
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
  if (active_.empty()) return Status::Ok();
  bool in_flight = false;
  for (Transport* transport : active_) in_flight |= transport->InFlight();
  // Allowed to wait, nothing an overlay must poll for: every transport takes
  // its last look in ArmWait, where it can tell whether that moved anything
  // (a sweep of Progress(0) cannot, and sleeping after one that completed a
  // request would leave the caller waiting for what it already has).
  if (timeout_ms > 0 && !in_flight) return WaitInAll(timeout_ms);
  for (Transport* transport : active_) CHORUS_RETURN_IF_ERROR(transport->Progress(0));
  // An overlay waits for something no carrier signals: the caller polls,
  // leaving the core to the peer it waits for where ranks share cores.
  if (timeout_ms > 0 && capabilities_.shares_cores) std::this_thread::yield();
  return Status::Ok();
}

Status TransportMux::LookAtAll(bool* ready) {
  *ready = false;
  for (Transport* transport : active_) {
    Transport::WaitArm arm;
    CHORUS_RETURN_IF_ERROR(transport->ArmWait(/*look_only=*/true, &arm));
    if (arm.fd < 0) waitable_ = false;
    if (arm.ready) *ready = true;
  }
  return Status::Ok();
}

Status TransportMux::WaitInAll(int timeout_ms) {
  // First look at every transport for as long as a shm wait spins and
  // yields before it sleeps (shm_wait_policy.h): where ranks share cores
  // the peer we wait for gets our core and answers within it; sleeping at
  // once measured up to 1.4x slower on 2 hosts of 2 ranks on 2 cores
  // (allreduce 4 MiB, hier).
  Status status;
  bool found = false;
  if (waitable_) {
    const SpinBudget budget =
        capabilities_.shares_cores ? shm::kSharedCoresPolicy.budget : shm::kDedicatedCoresPolicy.budget;
    SpinThenYield(budget, [&] {
      status = LookAtAll(&found);
      return !status.ok() || found || !waitable_;
    });
  }
  CHORUS_RETURN_IF_ERROR(status);
  if (found) return Status::Ok();
  if (!waitable_) {
    // A transport without a wait fd: wait in the first (the fastest) for a
    // short slice so that the others are polled every millisecond.
    CHORUS_RETURN_IF_ERROR(active_[0]->Progress(1));
    for (size_t i = 1; i < active_.size(); ++i) CHORUS_RETURN_IF_ERROR(active_[i]->Progress(0));
    return Status::Ok();
  }
  // Then sleep in poll(2) until any transport has work (transport.h,
  // ArmWait), so that a message on one wakes the rank as promptly as if it
  // were the only one.
  size_t armed = 0;
  bool ready = false;
  int sleep_ms = timeout_ms;
  for (Transport* transport : active_) {
    Transport::WaitArm arm;
    status = transport->ArmWait(/*look_only=*/false, &arm);
    ++armed;
    if (!status.ok() || arm.ready || arm.fd < 0) {
      ready = true;  // look again (and at a transport whose fd went away, by slices next time)
      if (arm.fd < 0) waitable_ = false;
      break;
    }
    wait_fds_[armed - 1] = {arm.fd, POLLIN, 0};
    if (arm.max_sleep_ms >= 0) sleep_ms = std::min(sleep_ms, arm.max_sleep_ms);
  }
  if (!ready) ::poll(wait_fds_.data(), armed, sleep_ms);  // EINTR: look again as after a timeout
  for (size_t i = 0; i < armed; ++i) active_[i]->DisarmWait();
  CHORUS_RETURN_IF_ERROR(status);
  for (Transport* transport : active_) CHORUS_RETURN_IF_ERROR(transport->Progress(0));
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
