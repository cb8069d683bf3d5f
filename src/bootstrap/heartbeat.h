// Heartbeat (CHORUS_HEARTBEAT_MS): names a peer whose process stopped
// (SIGSTOP, a debugger, a hung kernel) or was cut off long before a long
// deadline would. A stopped process's kernel still completes TCP handshakes
// and keeps its sockets open, so only something the process itself must do
// shows it: every rank sends each peer a small authenticated UDP datagram
// every period from a thread of its own, and reports a peer it has not
// heard from for kSilentPeriods periods. A rank that ends its communicator
// says goodbye first, so a peer that left is not taken for a silent one.
//
// A rank that finds a peer silent first tells the others (a notice naming
// it), so that they report that peer too, not the finder whose connections
// close right after.
//
// Datagram (little-endian): magic u32 "CHHB", kind u32 (beat, goodbye,
// notice), sender rank u32, number of ranks u32, the rank a notice is about
// u32, sequence u64, then SipHash-128 of those 28 bytes keyed by the
// communicator secret. A datagram that fails the MAC, names another
// communicator size, or repeats an older sequence is ignored, so a stranger
// can neither silence nor fake a rank.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "transports/socket/socket_address.h"

namespace chorus {

class Heartbeat {
 public:
  // A peer is silent after this many periods without a datagram from it.
  static constexpr int kSilentPeriods = 4;

  // Binds a UDP socket on `host` (numeric, the interface the communicator
  // uses), port chosen by the kernel.
  static Status Open(const std::string& host, int rank, int nranks, const uint8_t secret[16], int period_ms,
                     std::unique_ptr<Heartbeat>* out);
  // Says goodbye to every peer, then stops the thread.
  ~Heartbeat();
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  // "host:port" of the socket, for the peers.
  const std::string& address() const { return address_; }

  // Starts beating to `addresses` (by rank; this rank's own is ignored).
  // `on_silent` runs once, on the heartbeat thread, with the error naming
  // the first peer found silent; beats go on after it.
  Status Start(const std::vector<std::string>& addresses, std::function<void(const Status&)> on_silent);

 private:
  Heartbeat(int fd, int rank, int nranks, const uint8_t secret[16], int period_ms, std::string address);
  void Run();
  void SendToAll(uint32_t kind, uint32_t about);
  // Tells the peers (kSilentNotice), then runs on_silent_ once.
  void Report(int silent, const Status& why);
  void Receive(std::chrono::steady_clock::time_point now);
  void CheckSilence(std::chrono::steady_clock::time_point now);

  const int fd_;
  const int rank_;
  const int nranks_;
  uint8_t secret_[16];
  const int period_ms_;
  const std::string address_;
  std::vector<SocketAddress> peers_;
  std::vector<std::chrono::steady_clock::time_point> last_heard_;
  std::vector<uint64_t> last_sequence_;
  std::vector<bool> gone_;  // said goodbye
  uint64_t sequence_ = 0;
  std::function<void(const Status&)> on_silent_;
  bool reported_ = false;
  int wake_fd_ = -1;  // eventfd: readable once stopping
  std::thread thread_;
};

}  // namespace chorus
