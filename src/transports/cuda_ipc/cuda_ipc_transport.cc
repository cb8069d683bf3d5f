#include "transports/cuda_ipc/cuda_ipc_transport.h"

#include <unistd.h>

#include <cstdio>

#include "transports/cuda_ipc/cuda_ipc_endpoint.h"
#include "transports/cuda_ipc/pull_acks.h"

namespace chorus {
namespace {

// "<process token> <pid> <acknowledgement segment>".
std::string EncodeAddress(uint64_t token, pid_t pid, const std::string& segment) {
  return StrCat(token, " ", pid, " ", segment);
}

Status DecodeAddress(const std::string& text, uint64_t* token, pid_t* pid, std::string* segment) {
  char name[256] = {};
  unsigned long long parsed_token = 0;
  long parsed_pid = 0;
  if (std::sscanf(text.c_str(), "%llu %ld %255s", &parsed_token, &parsed_pid, name) != 3) {
    return InternalError("CUDA IPC: bad address '", text, "'");
  }
  *token = parsed_token;
  *pid = static_cast<pid_t>(parsed_pid);
  *segment = name;
  return Status::Ok();
}

class CudaIpcTransport final : public Transport {
 public:
  CudaIpcTransport(const TransportOptions& options, std::unique_ptr<DeviceIpc> ipc, std::unique_ptr<PullAcks> acks)
      : options_(options), ipc_(std::move(ipc)), acks_(std::move(acks)) {}
  ~CudaIpcTransport() override { Shutdown(); }

  const char* name() const override { return "cuda_ipc"; }
  TransportCapabilities capabilities() const override {
    TransportCapabilities capabilities;
    capabilities.same_host_only = true;
    capabilities.memory_kinds = kCpuAccessibleKinds | KindBit(ipc_->kind());
    capabilities.combine_on_receive = true;
    for (const Carrier& carrier : carriers_) {
      if (carrier.endpoint != nullptr) capabilities.combine_on_receive &= carrier.endpoint->combine_on_receive();
    }
    return capabilities;
  }
  std::string LocalAddress() const override { return EncodeAddress(ipc_->ProcessToken(), ::getpid(), acks_->name()); }

  Status SetCarriers(const std::vector<Carrier>& carriers) override {
    if (carriers.size() != static_cast<size_t>(options_.nranks)) {
      return InternalError("cuda_ipc: ", carriers.size(), " carriers for ", options_.nranks, " ranks");
    }
    carriers_ = carriers;
    return Status::Ok();
  }

  Status Connect(const std::vector<std::string>& addresses, Deadline deadline) override {
    endpoints_.clear();
    endpoints_.resize(options_.nranks);
    int overlaid = 0;
    for (int peer = 0; peer < options_.nranks; ++peer) {
      if (peer == options_.rank || peer >= static_cast<int>(addresses.size()) || addresses[peer].empty()) continue;
      if (peer >= static_cast<int>(carriers_.size()) || carriers_[peer].endpoint == nullptr) {
        return InternalError("cuda_ipc: no carrier to rank ", peer);
      }
      CudaIpcEndpoint::Peer info;
      info.rank = peer;
      uint64_t token = 0;
      std::string segment;
      CHORUS_RETURN_IF_ERROR(DecodeAddress(addresses[peer], &token, &info.pid, &segment));
      info.same_process = token == ipc_->ProcessToken();
      if (info.same_process) info.pid = 0;  // its liveness is ours
      CHORUS_RETURN_IF_ERROR(acks_->OpenPeer(peer, segment));
      endpoints_[peer] = std::make_unique<CudaIpcEndpoint>(info, carriers_[peer].endpoint, ipc_.get(), acks_.get());
      ++overlaid;
    }
    return acks_->AwaitMapped(overlaid, deadline);
  }

  Endpoint* endpoint(int peer) override {
    return peer >= 0 && peer < static_cast<int>(endpoints_.size()) ? endpoints_[peer].get() : nullptr;
  }

  // Never blocks: what it waits for arrives through the carriers, which the
  // caller progresses (TransportMux), or as acknowledgements it polls.
  Status Progress(int) override {
    if (shut_down_) return InternalError("cuda_ipc: used after shutdown");
    for (auto& endpoint : endpoints_) {
      if (endpoint != nullptr) CHORUS_RETURN_IF_ERROR(endpoint->Progress());
    }
    return Status::Ok();
  }
  bool InFlight() const override {
    for (const auto& endpoint : endpoints_) {
      if (endpoint != nullptr && endpoint->AwaitsAcknowledgement()) return true;
    }
    return false;
  }
  void Wakeup() override {}
  void Shutdown() override {
    shut_down_ = true;
    for (auto& endpoint : endpoints_) {
      if (endpoint != nullptr) endpoint->Shutdown();
    }
  }

 private:
  TransportOptions options_;
  std::unique_ptr<DeviceIpc> ipc_;
  std::unique_ptr<PullAcks> acks_;
  std::vector<Carrier> carriers_;
  std::vector<std::unique_ptr<CudaIpcEndpoint>> endpoints_;
  bool shut_down_ = false;
};

}  // namespace

Status CreateCudaIpcTransport(const TransportOptions& options, std::unique_ptr<DeviceIpc> ipc,
                              std::unique_ptr<Transport>* out) {
  if (ipc == nullptr) return InternalError("cuda_ipc: no device runtime");
  std::unique_ptr<PullAcks> acks;
  CHORUS_RETURN_IF_ERROR(PullAcks::Create(options.secret, options.rank, options.nranks, &acks));
  *out = std::make_unique<CudaIpcTransport>(options, std::move(ipc), std::move(acks));
  return Status::Ok();
}

}  // namespace chorus
