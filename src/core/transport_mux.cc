#include "core/transport_mux.h"

#include <algorithm>

namespace chorus {

Status TransportMux::Create(std::vector<std::unique_ptr<Transport>> transports, int rank, int nranks,
                            std::unique_ptr<TransportMux>* out) {
  auto mux = std::unique_ptr<TransportMux>(new TransportMux());
  mux->transports_ = std::move(transports);
  mux->routes_.assign(nranks, nullptr);
  mux->route_names_.assign(nranks, "none");
  for (int peer = 0; peer < nranks; ++peer) {
    if (peer == rank) continue;
    for (auto& transport : mux->transports_) {
      Endpoint* endpoint = transport->endpoint(peer);
      if (endpoint == nullptr) continue;
      mux->routes_[peer] = endpoint;
      mux->route_names_[peer] = transport->name();
      if (std::find(mux->active_.begin(), mux->active_.end(), transport.get()) == mux->active_.end()) {
        mux->active_.push_back(transport.get());
      }
      break;
    }
    if (mux->routes_[peer] == nullptr) return InternalError("rank ", rank, ": no transport reaches peer ", peer);
  }
  mux->capabilities_.combine_on_receive = !mux->active_.empty();
  for (Transport* transport : mux->active_) {
    mux->capabilities_.combine_on_receive &= transport->capabilities().combine_on_receive;
    mux->capabilities_.shares_cores |= transport->capabilities().shares_cores;
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
  for (Transport* transport : active_) CHORUS_RETURN_IF_ERROR(transport->Progress(0));
  if (timeout_ms == 0 || active_.empty()) return Status::Ok();
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

const char* TransportMux::TransportNameFor(int peer) const {
  return peer >= 0 && peer < static_cast<int>(route_names_.size()) ? route_names_[peer] : "none";
}

}  // namespace chorus
