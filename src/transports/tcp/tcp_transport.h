// TcpTransport: messages over TCP sockets, `nsocks` sockets ("lanes") per
// peer, driven by one edge-triggered epoll set. Message k to (or from) a
// peer travels on lane k % nsocks on both sides, so per-peer order holds
// without sequence numbers. Every message is a WireHeader then the payload,
// read straight into the posted buffer; posting allocates nothing.
//
// Threading: PostSend/PostRecv/Progress from one thread at a time (the
// progress engine); Wakeup and Shutdown from any thread.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "transports/socket/socket.h"
#include "transports/tcp/tcp_lane.h"
#include "transports/transport.h"

namespace chorus {

// The TCP transport's own options (CHORUS_NSOCKS, CHORUS_SOCKET_RCVBUF/SNDBUF;
// ReadTcpOptions in tcp_options.h) beside what every transport gets.
struct TcpOptions : TransportOptions {
  int nsocks = 2;         // sockets (lanes) per peer
  int socket_rcvbuf = 0;  // SO_RCVBUF of every lane; 0 = kernel autotuning
  int socket_sndbuf = 0;  // SO_SNDBUF of every lane; 0 = kernel autotuning
};

class TransportVars;
struct TransportDescriptor;
// CHORUS_NSOCKS and CHORUS_SOCKET_RCVBUF/SNDBUF from `vars` (tcp_descriptor.cc).
Status ReadTcpOptions(const TransportVars& vars, TcpOptions* options);
// The registry's entry for TCP (transports/registry.cc).
TransportDescriptor TcpTransportDescriptor();

// Listens on the interface chosen by options.ifname (ephemeral port).
Status CreateTcpTransport(const TcpOptions& options, std::unique_ptr<Transport>* transport);

class TcpTransport : public Transport {
 public:
  ~TcpTransport() override;

  const char* name() const override { return "tcp"; }
  TransportCapabilities capabilities() const override { return {}; }
  std::string LocalAddress() const override { return local_address_; }
  // addresses[i] empty: rank i is served by another transport (no lanes).
  Status Connect(const std::vector<std::string>& addresses, Deadline deadline) override;
  Endpoint* endpoint(int peer) override;
  Status Progress(int timeout_ms) override;
  void Wakeup() override;
  // The wait on several transports (transport.h): the fd is the epoll set,
  // readable while it holds events (a lane's or Wakeup's) not yet taken.
  Status ArmWait(bool look_only, WaitArm* arm) override;
  void Shutdown() override;
  // One notice per peer, on a lane where no message is half sent.
  void ShutdownWithNotice(const CloseNotice& notice) override;
  bool ReceivedNotice(CloseNotice* notice) const override;

  // Each lane's SO_RCVBUF/SO_SNDBUF as the kernel reports them (twice what
  // CHORUS_SOCKET_RCVBUF/SNDBUF set; -1 where getsockopt failed), in lane
  // order; empty before Connect. For the INFO log line and tests.
  std::vector<SocketBuffers> LaneBufferSizes() const;

 private:
  friend Status CreateTcpTransport(const TcpOptions&, std::unique_ptr<Transport>*);
  class TcpEndpoint;
  struct Peer;

  explicit TcpTransport(const TcpOptions& options);
  Status Listen();
  Status Post(int peer, TransferRequest* request, bool is_send);
  Status ProgressLanes(bool* progressed);
  // *woken (if given): Wakeup was called.
  Status WaitForEvents(int timeout_ms, bool* lane_events, bool* woken = nullptr);
  // Polls the lanes, yielding the core between polls, until one progresses,
  // Wakeup is called or kPollBeforeSleep passes.
  Status PollBeforeSleeping(bool* progressed);
  Status Fail(Status status);
  // Looks at every lane for a close notice (cold: after a failure, or when a
  // peer hung up); keeps the first in notice_.
  bool ScanNotices(CloseNotice* notice);
  void LogLaneBuffers() const;

  TcpOptions options_;
  Socket listener_;
  std::string local_address_;
  Socket epoll_;                              // not a socket, but the same close-on-destroy ownership
  Socket wakeup_;                             // eventfd
  std::vector<std::unique_ptr<Peer>> peers_;  // by rank; null for self
  std::vector<TcpLane*> lanes_;               // every lane, for the progress sweep
  bool connected_ = false;
  Status error_;               // first failure; returned by every later call
  std::mutex shutdown_mutex_;  // Shutdown vs. Connect publishing the lanes
  std::atomic<bool> shut_down_{false};
  std::atomic<uint64_t> notice_{0};  // EncodeCloseNotice of the first notice received
};

}  // namespace chorus
