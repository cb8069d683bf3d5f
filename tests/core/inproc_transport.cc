#include "inproc_transport.h"

#include <chrono>
#include <cstring>

namespace chorus::testing {

InprocFabric::InprocFabric(int nranks)
    : nranks_(nranks), channels_(static_cast<size_t>(nranks) * nranks), ranks_(nranks) {
  for (int rank = 0; rank < nranks; ++rank) transports_.push_back(std::make_unique<InprocTransport>(this, rank));
}

InprocFabric::~InprocFabric() = default;

Transport* InprocFabric::transport(int rank) { return transports_.at(rank).get(); }

class InprocTransport::InprocEndpoint : public Endpoint {
 public:
  InprocEndpoint(InprocTransport* transport, int peer) : transport_(transport), peer_(peer) {}
  int peer() const override { return peer_; }
  Status PostSend(TransferRequest* request) override { return transport_->Post(peer_, request, true); }
  Status PostRecv(TransferRequest* request) override { return transport_->Post(peer_, request, false); }

 private:
  InprocTransport* transport_;
  int peer_;
};

InprocTransport::InprocTransport(InprocFabric* fabric, int rank) : fabric_(fabric), rank_(rank) {
  for (int peer = 0; peer < fabric->nranks(); ++peer) {
    endpoints_.push_back(peer == rank ? nullptr : std::make_unique<InprocEndpoint>(this, peer));
  }
}

InprocTransport::~InprocTransport() = default;

Status InprocTransport::Connect(const std::vector<std::string>& addresses, Deadline) {
  if (static_cast<int>(addresses.size()) != fabric_->nranks()) {
    return InvalidArgument("inproc: ", addresses.size(), " addresses for ", fabric_->nranks(), " ranks");
  }
  return Status::Ok();
}

Endpoint* InprocTransport::endpoint(int peer) {
  if (peer < 0 || peer >= fabric_->nranks()) return nullptr;
  return endpoints_[peer].get();
}

Status InprocTransport::Fail(const Lock&, Status status) {
  Status& error = fabric_->ranks_[rank_].error;
  if (error.ok()) error = std::move(status);
  return error;
}

Status InprocTransport::Post(int peer, TransferRequest* request, bool is_send) {
  Lock lock(fabric_->mutex_);
  InprocFabric::RankState& self = fabric_->ranks_[rank_];
  if (!self.error.ok()) return self.error;
  if (self.shut_down) return Fail(lock, RemoteError("rank ", rank_, ": transport was shut down"));
  if (peer == rank_ || peer < 0 || peer >= fabric_->nranks()) return InternalError("inproc: bad peer ", peer);
  if (fabric_->ranks_[peer].shut_down) return Fail(lock, RemoteError("peer ", peer, " shut down its connections"));
  request->done = false;
  if (is_send) {
    fabric_->channel(rank_, peer).sends.push_back(request);
  } else {
    fabric_->channel(peer, rank_).recvs.push_back(request);
  }
  // The receiver matches; wake it when a send arrives.
  if (is_send) fabric_->ranks_[peer].wake.notify_all();
  return Status::Ok();
}

Status InprocTransport::Sweep(const Lock& lock, bool* progressed) {
  InprocFabric::RankState& self = fabric_->ranks_[rank_];
  if (!self.error.ok()) return self.error;
  if (self.shut_down) return Fail(lock, RemoteError("rank ", rank_, ": transport was shut down"));

  for (int src = 0; src < fabric_->nranks(); ++src) {
    if (src == rank_) continue;
    InprocFabric::Channel& channel = fabric_->channel(src, rank_);
    while (!channel.sends.empty() && !channel.recvs.empty()) {
      TransferRequest* send = channel.sends.front();
      TransferRequest* recv = channel.recvs.front();
      if (send->bytes != recv->bytes || send->tag != recv->tag) {
        return Fail(lock, InternalError("message from peer ", src, " does not match the posted receive: expected ",
                                        recv->bytes, " bytes with tag ", recv->tag, ", peer sent ", send->bytes,
                                        " bytes with tag ", send->tag));
      }
      if (send->bytes > 0) std::memcpy(recv->buffer, send->buffer, send->bytes);
      channel.sends.pop_front();
      channel.recvs.pop_front();
      recv->done = true;
      // The sender marks its own request done in its next Progress.
      fabric_->ranks_[src].completed_sends.push_back(send);
      fabric_->ranks_[src].wake.notify_all();
      *progressed = true;
    }
  }

  for (TransferRequest* send : self.completed_sends) send->done = true;
  if (!self.completed_sends.empty()) *progressed = true;
  self.completed_sends.clear();

  for (int peer = 0; peer < fabric_->nranks(); ++peer) {
    if (peer != rank_ && fabric_->ranks_[peer].shut_down && fabric_->HasPending(rank_, peer)) {
      return Fail(lock, RemoteError("peer ", peer, " shut down its connections"));
    }
  }
  return Status::Ok();
}

Status InprocTransport::Progress(int timeout_ms) {
  Lock lock(fabric_->mutex_);
  bool progressed = false;
  Status status = Sweep(lock, &progressed);
  if (!status.ok() || progressed || timeout_ms <= 0) return status;

  InprocFabric::RankState& self = fabric_->ranks_[rank_];
  auto has_work = [&] {
    if (self.wakeup || self.shut_down || !self.completed_sends.empty()) return true;
    for (int peer = 0; peer < fabric_->nranks(); ++peer) {
      if (peer == rank_) continue;
      const InprocFabric::Channel& in = fabric_->channel(peer, rank_);
      if (!in.sends.empty() && !in.recvs.empty()) return true;
      if (fabric_->ranks_[peer].shut_down && fabric_->HasPending(rank_, peer)) return true;
    }
    return false;
  };
  self.wake.wait_for(lock, std::chrono::milliseconds(timeout_ms), has_work);
  self.wakeup = false;
  return Sweep(lock, &progressed);
}

void InprocTransport::Wakeup() {
  Lock lock(fabric_->mutex_);
  fabric_->ranks_[rank_].wakeup = true;
  fabric_->ranks_[rank_].wake.notify_all();
}

void InprocTransport::Shutdown() {
  Lock lock(fabric_->mutex_);
  fabric_->ranks_[rank_].shut_down = true;
  // The owner may free its requests once Shutdown returns: peers must not
  // match against them any more.
  for (int peer = 0; peer < fabric_->nranks(); ++peer) {
    if (peer == rank_) continue;
    fabric_->channel(rank_, peer).sends.clear();
    fabric_->channel(peer, rank_).recvs.clear();
  }
  fabric_->ranks_[rank_].completed_sends.clear();
  for (InprocFabric::RankState& state : fabric_->ranks_) state.wake.notify_all();
}

}  // namespace chorus::testing
