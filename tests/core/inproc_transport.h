// InprocTransport: a test-only in-memory Transport, so that the executor and
// everything above it can be tested with N ranks as threads of one process
// and no sockets. It implements transports/transport.h to the letter:
//  - messages from A to B match in posting order (one FIFO per direction);
//  - the receiver's bytes and tag must equal the sender's, else the
//    receiver's Progress fails with chorusInternalError naming the peer;
//  - sends are rendezvous: a send is done only when its receive has taken
//    the bytes (stricter than TCP's buffering, so it exposes more deadlocks);
//  - Progress blocks on a condition variable for at most its timeout;
//  - Shutdown makes the peers' pending (and later) requests with this rank
//    fail with chorusRemoteError naming the rank.
// `done` flags are only written by the thread that owns the request (the
// one calling its rank's Progress), never by a peer.
//
// The fabric, shared by the N ranks, owns every queue; there is no global
// state, so tests may run several fabrics at once.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "transports/transport.h"

namespace chorus::testing {

class InprocTransport;

class InprocFabric {
 public:
  explicit InprocFabric(int nranks);
  ~InprocFabric();
  InprocFabric(const InprocFabric&) = delete;
  InprocFabric& operator=(const InprocFabric&) = delete;

  int nranks() const { return nranks_; }
  // The transport of `rank`, owned by the fabric (already connected).
  Transport* transport(int rank);

 private:
  friend class InprocTransport;

  // Requests posted from `src` to `dst`, not yet matched.
  struct Channel {
    std::deque<TransferRequest*> sends;  // owned by src
    std::deque<TransferRequest*> recvs;  // owned by dst
  };
  struct RankState {
    std::condition_variable wake;
    std::vector<TransferRequest*> completed_sends;  // matched, `done` not yet set
    bool wakeup = false;
    bool shut_down = false;
    Status error;  // first failure; the transport is unusable after it
  };

  Channel& channel(int src, int dst) { return channels_[static_cast<size_t>(src) * nranks_ + dst]; }
  // Requests of `rank` with `peer` not yet matched.
  bool HasPending(int rank, int peer) {
    return !channel(rank, peer).sends.empty() || !channel(peer, rank).recvs.empty();
  }

  const int nranks_;
  std::mutex mutex_;  // guards everything below
  std::vector<Channel> channels_;
  std::vector<RankState> ranks_;
  std::vector<std::unique_ptr<InprocTransport>> transports_;
};

class InprocTransport : public Transport {
 public:
  InprocTransport(InprocFabric* fabric, int rank);
  ~InprocTransport() override;

  const char* name() const override { return "inproc"; }
  TransportCapabilities capabilities() const override { return {}; }
  std::string LocalAddress() const override { return "inproc:" + std::to_string(rank_); }
  Status Connect(const std::vector<std::string>& addresses, Deadline deadline) override;
  Endpoint* endpoint(int peer) override;
  Status Progress(int timeout_ms) override;
  void Wakeup() override;
  void Shutdown() override;

 private:
  class InprocEndpoint;
  using Lock = std::unique_lock<std::mutex>;

  Status Post(int peer, TransferRequest* request, bool is_send);
  // One sweep under the lock: matches incoming messages, completes our
  // sends that peers matched, detects dead peers. Sets *progressed.
  Status Sweep(const Lock& lock, bool* progressed);
  Status Fail(const Lock& lock, Status status);

  InprocFabric* const fabric_;
  const int rank_;
  std::vector<std::unique_ptr<InprocEndpoint>> endpoints_;  // null for self
};

// A Transport forwarding to one the fabric owns, so that a mux can hold it.
// Derive to change what it reports (e.g. capabilities).
class BorrowedTransport : public Transport {
 public:
  explicit BorrowedTransport(Transport* inner) : inner_(inner) {}
  const char* name() const override { return inner_->name(); }
  TransportCapabilities capabilities() const override { return inner_->capabilities(); }
  std::string LocalAddress() const override { return inner_->LocalAddress(); }
  Status Connect(const std::vector<std::string>& addresses, Deadline deadline) override {
    return inner_->Connect(addresses, deadline);
  }
  Endpoint* endpoint(int peer) override { return inner_->endpoint(peer); }
  Status Progress(int timeout_ms) override { return inner_->Progress(timeout_ms); }
  bool InFlight() const override { return inner_->InFlight(); }
  Status SetCarriers(const std::vector<Carrier>& carriers) override { return inner_->SetCarriers(carriers); }
  void Wakeup() override { inner_->Wakeup(); }
  Status ArmWait(bool look_only, WaitArm* arm) override { return inner_->ArmWait(look_only, arm); }
  void DisarmWait() override { inner_->DisarmWait(); }
  void Shutdown() override { inner_->Shutdown(); }

 protected:
  Transport* inner_;
};

}  // namespace chorus::testing
