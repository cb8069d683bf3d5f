// UcxTransport: messages over UCP tag matching (UCX 1.13+), one UCP context
// and one worker per transport. Every Chorus message is one UCP message,
// sent from and received into the caller's buffer, tagged with the sender's
// rank, the message's number in that direction and check bits of the Chorus
// tag (ucx_tag.h), so per-peer order holds whatever order UCP completes them
// in, and the receiver checks the tag and the length it got. Endpoints use
// UCP_ERR_HANDLING_MODE_PEER: a peer's death reaches the error callback, and
// a peer that shuts down sends a closing notice; either fails Progress,
// naming the peer, while a transfer to or from it is pending (as TCP's EOF).
// A Progress that may wait drives the worker while it keeps finding work (a
// large message over UCX's tcp needs a progress call per socket buffer),
// unless the ranks of this host outnumber its CPUs; then, or once the
// worker is idle, it arms the worker and sleeps on its event fd (and a
// wakeup eventfd).
//
// Threading: PostSend/PostRecv/Progress from one thread at a time (the
// progress engine); Wakeup and Shutdown from any thread. Every UCP call is
// made under one mutex (the worker is UCS_THREAD_MODE_SERIALIZED), released
// while Progress sleeps, so Shutdown can tear the endpoints down at once.
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "transports/socket/socket.h"
#include "transports/transport.h"
#include "transports/ucx/ucx_tag.h"

namespace chorus {

// The UCX transport's own options (CHORUS_UCX_TLS, CHORUS_UCX_KEEPALIVE_MS)
// beside what every transport gets.
struct UcxOptions : TransportOptions {
  std::string tls;         // UCX_TLS for this context only; empty: UCX's own (UCX_TLS or all)
  int keepalive_ms = 1000; // UCX_KEEPALIVE_INTERVAL: how soon a silent peer's death is noticed
};

class TransportVars;
// CHORUS_UCX_TLS and CHORUS_UCX_KEEPALIVE_MS from `vars` (ucx_descriptor.cc).
Status ReadUcxOptions(const TransportVars& vars, UcxOptions* options);

// Creates the UCP context and worker; the address is the worker's.
Status CreateUcxTransport(const UcxOptions& options, std::unique_ptr<Transport>* transport);

class UcxTransport : public Transport {
 public:
  ~UcxTransport() override;

  const char* name() const override { return "ucx"; }
  TransportCapabilities capabilities() const override {
    TransportCapabilities capabilities;
    capabilities.shares_cores = shares_cores_;
    return capabilities;
  }
  std::string LocalAddress() const override { return local_address_; }
  // addresses[i] empty: rank i is served by another transport (no endpoint).
  Status Connect(const std::vector<std::string>& addresses, Deadline deadline) override;
  Endpoint* endpoint(int peer) override;
  Status Progress(int timeout_ms) override;
  void Wakeup() override;
  // The wait on several transports (transport.h): the fd is an epoll set of
  // the worker's event fd (armed with ucp_worker_arm) and the Wakeup eventfd.
  Status ArmWait(bool look_only, WaitArm* arm) override;
  void DisarmWait() override;
  void Shutdown() override;

 private:
  friend Status CreateUcxTransport(const UcxOptions&, std::unique_ptr<Transport>*);
  class UcxEndpoint;
  struct Peer;
  struct Op;

  explicit UcxTransport(const UcxOptions& options);
  Status Init();
  Status Post(int peer, TransferRequest* request, bool is_send);
  void StartSend(Op* op, const void* buffer, size_t bytes, uint64_t tag);
  void StartRecv(Op* op, void* buffer, size_t bytes, uint64_t tag);
  Op* AcquireOp();
  // Runs the worker until it has nothing to do, then completes finished
  // requests; *progressed: some request finished; *active (if given): the
  // worker found something to do. Holds mutex_.
  Status Drive(bool* progressed, bool* active = nullptr);
  // Drives the worker while it keeps finding work and requests are in
  // flight, until one finishes, the worker has been idle for
  // kIdleBeforeSleep or `until` passes. Holds mutex_.
  Status DriveWhileActive(std::chrono::steady_clock::time_point until, bool* progressed);
  Status FinishOp(Op* op);
  static Status PeerFailure(const Peer& peer);
  // Sleeps until the worker has events, Wakeup is called or `timeout_ms`
  // passes; releases `lock` meanwhile.
  Status Sleep(std::unique_lock<std::mutex>& lock, int timeout_ms);
  // ucp_worker_arm: *busy when events came since the worker was last
  // driven (then do not sleep). Holds mutex_.
  Status ArmWorker(bool* busy);
  Status WaitForRequests(std::unique_lock<std::mutex>& lock, std::vector<void*>* requests, Deadline deadline,
                         const char* what);
  Status Fail(Status status);
  // Lets go of every posted request and closes the endpoints. Holds mutex_.
  void Teardown();
  // Progresses until `requests` complete or `deadline`, then frees them all.
  void ProgressUntilComplete(std::vector<void*>* requests, Deadline deadline);
  static void SendDone(void* request, ucs_status_t status, void* user_data);
  static void RecvDone(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info, void* user_data);
  static void PeerFailed(void* arg, ucp_ep_h ep, ucs_status_t status);
  static void NoticeArrived(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info, void* user_data);

  UcxOptions options_;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  int worker_fd_ = -1;  // owned by the worker
  Socket wakeup_;       // eventfd; not a socket, but the same close-on-destroy ownership
  Socket wait_set_;     // epoll set of worker_fd_ and wakeup_, ArmWait's fd
  std::string local_address_;
  std::vector<std::unique_ptr<Peer>> peers_;  // by rank; null for self and peers of other transports
  std::deque<Op> ops_;                        // stable addresses; UCP callbacks point into them
  Op* free_ops_ = nullptr;
  std::vector<Op*> inflight_;                 // in posting order
  bool connected_ = false;
  // The ranks on this host outnumber their CPUs (decided at Connect from
  // the masks in the addresses, alike on every rank of the host).
  bool shares_cores_ = false;
  Status error_;  // first failure; returned by every later call
  std::mutex mutex_;
  std::atomic<bool> shut_down_{false};
  bool torn_down_ = false;
};

}  // namespace chorus
