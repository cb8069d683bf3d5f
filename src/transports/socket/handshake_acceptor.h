// HandshakeAcceptor: serves every unauthenticated connection of a listener at
// once. Each accepted connection runs the handshake (handshake.h) and then
// reads its request, all without blocking, driven by poll(2); each has its
// own budget from accept to complete request, and at most a few may wait
// from one source address. So a stranger that connects and stays silent, or
// trickles junk, holds a descriptor for at most its budget and delays
// nobody: the members' connections complete beside it.
//
// A connection that fails (wrong MAC, foreign protocol, malformed request,
// EOF, its budget spent, pushed out by newer ones from the same source) is
// closed and reported through `on_drop`; only authenticated, complete
// requests are handed to the caller.
#pragma once

#include <poll.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"
#include "transports/socket/handshake.h"
#include "transports/socket/socket.h"

namespace chorus {

// How long one connection may take from accept to its complete request. It
// delays nobody else; it bounds how long a silent stranger holds a slot, and
// is generous so that a member on a loaded host is never cut off.
constexpr int kHandshakeBudgetMs = 5000;
// How many connections from one source address may be authenticating at
// once; a newer one pushes the oldest out. Members' connections complete
// within a round trip, so they are the newest; a listener that expects many
// members from one host at once raises it (set_max_pending_per_source).
constexpr int kMaxPendingPerSource = 64;

// After the handshake: given the request bytes received so far, how many
// more the connection must send (0: complete). An error drops it. It sees
// the bytes as they come, so a length field can be checked before its body
// is read.
using RequestFraming = std::function<Status(const std::string& received, size_t* more)>;

struct AcceptorOptions {
  ConnectionPurpose purpose = ConnectionPurpose::kRendezvous;
  std::string where;  // names the listener in reports, e.g. "rendezvous root"
  int budget_ms = kHandshakeBudgetMs;
  int max_pending_per_source = kMaxPendingPerSource;
  RequestFraming framing;  // empty: nothing is read after the handshake
  // How a dropped connection is reported; empty: one WARN line (NET).
  std::function<void(const Status&)> on_drop;
};

// An authenticated connection with its whole request.
struct AdmittedConnection {
  Socket socket;  // non-blocking; peer_name() is its "host:port"
  Hello hello;
  std::string request;
};

class HandshakeAcceptor {
 public:
  // `listener` and `secret` must outlive the acceptor.
  HandshakeAcceptor(const Socket& listener, const uint8_t secret[kSecretBytes], AcceptorOptions options);
  ~HandshakeAcceptor();
  HandshakeAcceptor(const HandshakeAcceptor&) = delete;
  HandshakeAcceptor& operator=(const HandshakeAcceptor&) = delete;

  void set_max_pending_per_source(int cap) { options_.max_pending_per_source = cap < 1 ? 1 : cap; }
  // Connections accepted and not yet admitted or dropped.
  size_t pending() const;

  // Waits until `until` (at most) for the listener and the pending
  // connections, handles what is ready and appends what completed to
  // `*admitted`. Fails only when the listener does (accept errors other than
  // those of the aborted connection itself).
  Status Admit(Deadline until, std::vector<AdmittedConnection>* admitted);

  // The same in steps, for callers that poll descriptors of their own too:
  // append the acceptor's entries, poll with PollTimeoutMs(until), then
  // Handle() with the same vector (the acceptor reads only its own entries).
  void AppendPollEntries(std::vector<pollfd>* entries);
  int PollTimeoutMs(Deadline until) const;
  Status Handle(const std::vector<pollfd>& entries, std::vector<AdmittedConnection>* admitted);

 private:
  struct Pending;
  enum class Step { kWaiting, kAdmitted, kFailed };

  Step Advance(Pending& pending, Status* why);
  Status AcceptNew(std::vector<AdmittedConnection>* admitted);
  void AdvanceAt(size_t index, std::vector<AdmittedConnection>* admitted);
  void Drop(size_t index, const Status& why);
  static bool ClosedWithoutAWord(const Pending& pending, const Status& why);
  void MakeRoomFor(const std::string& source);
  void DropExpired();

  const Socket& listener_;
  uint8_t secret_[kSecretBytes];
  AcceptorOptions options_;
  std::vector<Pending> pending_;
  uint64_t accepted_ = 0;  // orders pending connections by age
  size_t first_entry_ = 0;  // where AppendPollEntries put the listener
  size_t entries_ = 0;      // how many entries it appended
};

}  // namespace chorus
