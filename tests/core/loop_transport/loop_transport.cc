#include "tests/core/loop_transport/loop_transport.h"

#include <string>
#include <vector>

namespace chorus::testing {
namespace {

// Counts sends, then hands the request to the fabric's endpoint.
class CountingEndpoint : public Endpoint {
 public:
  CountingEndpoint(Endpoint* inner, std::atomic<long>* sent) : inner_(inner), sent_(sent) {}
  int peer() const override { return inner_->peer(); }
  Status PostSend(TransferRequest* request) override {
    sent_->fetch_add(1);
    return inner_->PostSend(request);
  }
  Status PostRecv(TransferRequest* request) override { return inner_->PostRecv(request); }

 private:
  Endpoint* inner_;
  std::atomic<long>* sent_;
};

class LoopTransport : public BorrowedTransport {
 public:
  LoopTransport(LoopFabric* fabric, int rank)
      : BorrowedTransport(fabric->inproc.transport(rank)), fabric_(fabric), rank_(rank) {}
  const char* name() const override { return "loop"; }
  // The fabric's address tells processes (and fabrics) apart.
  std::string LocalAddress() const override {
    const int island = fabric_->island_from >= 0 && rank_ >= fabric_->island_from ? 1 : 0;
    return StrCat("loop ", reinterpret_cast<uintptr_t>(fabric_), ".", island, " ", rank_);
  }
  Status Connect(const std::vector<std::string>& addresses, Deadline deadline) override {
    CHORUS_RETURN_IF_ERROR(inner_->Connect(addresses, deadline));
    for (size_t peer = 0; peer < addresses.size(); ++peer) {
      const bool reached = static_cast<int>(peer) != rank_ && !addresses[peer].empty();
      endpoints_.push_back(reached ? std::make_unique<CountingEndpoint>(inner_->endpoint(static_cast<int>(peer)),
                                                                        &fabric_->messages_sent)
                                   : nullptr);
    }
    return Status::Ok();
  }
  Endpoint* endpoint(int peer) override {
    return peer >= 0 && peer < static_cast<int>(endpoints_.size()) ? endpoints_[peer].get() : nullptr;
  }

 private:
  LoopFabric* fabric_;
  int rank_;
  std::vector<std::unique_ptr<CountingEndpoint>> endpoints_;
};

Status CreateLoop(const TransportDescriptor& descriptor, const TransportOptions& options, const TransportVars&,
                  std::unique_ptr<Transport>* out) {
  auto* fabric = static_cast<LoopFabric*>(descriptor.context);
  if (options.nranks != fabric->inproc.nranks()) {
    return InvalidArgument("loop: a fabric of ", fabric->inproc.nranks(), " ranks for ", options.nranks);
  }
  if (options.rank == fabric->fail_rank) return SystemError("loop: rank ", options.rank, " told to fail");
  fabric->created.fetch_add(1);
  *out = std::make_unique<LoopTransport>(fabric, options.rank);
  return Status::Ok();
}

// Same fabric: the address up to the rank.
bool SameFabric(const TransportDescriptor& descriptor, const PeerPublication& self, const PeerPublication& peer) {
  const std::string* mine = self.AddressFor(descriptor.name);
  const std::string* theirs = peer.AddressFor(descriptor.name);
  if (mine == nullptr || theirs == nullptr) return false;
  return mine->substr(0, mine->rfind(' ')) == theirs->substr(0, theirs->rfind(' '));
}

}  // namespace

TransportDescriptor LoopTransportDescriptor(LoopFabric* fabric) {
  TransportDescriptor descriptor = {};
  descriptor.name = "loop";
  descriptor.preference = 1;
  descriptor.capabilities.same_host_only = true;
  descriptor.create = CreateLoop;
  descriptor.reaches = SameFabric;
  descriptor.context = fabric;
  return descriptor;
}

}  // namespace chorus::testing
