// Wire format of shrink (after the authenticated handshake, purpose
// kRendezvous, hello.rank = the asker's old rank), little-endian:
//   asker -> listener : magic u32 "SHRK", old rank i32, old nranks i32
//   listener -> asker : reply code u32, body length u64, body
// The asker is a rank joining its root candidate, or a root asking a rank it
// has not heard from; both send the same request. Reply codes:
//   chorusSuccess      the table (from a root): nonce (16 bytes), n u32, n old
//                      ranks u32 in ascending order, new root address length
//                      u32, address bytes;
//   kReplyLeftOut      the asker is not in the membership (the body: n u32,
//                      n old ranks u32 ascending) that a shrink agreed on
//                      without it: final;
//   kReplyNotShrinking the asker is in that membership, but the answering
//                      rank is not shrinking now: ask again later;
//   other results      an error; the body is the message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"
#include "bootstrap/shrink.h"
#include "transports/socket/handshake_acceptor.h"
#include "transports/socket/socket.h"

namespace chorus::shrink {

constexpr uint32_t kJoinMagic = 0x4b524853;  // "SHRK"
constexpr size_t kJoinBytes = 12;
constexpr size_t kReplyHeaderBytes = 12;
constexpr size_t kNonceBytes = 16;
constexpr uint64_t kMaxBodyBytes = 1 << 20;
constexpr uint32_t kReplyLeftOut = 0x5446454c;       // "LEFT", not a chorusResult_t
constexpr uint32_t kReplyNotShrinking = 0x4c444449;  // "IDDL"
// How long one connection attempt to a listener may take before its rank is
// counted as unreachable (a live process's kernel answers at once).
constexpr int kProbeWindowMs = 2000;
// How long a question may take once the listener's owner has accepted it
// (both ends are running code that answers at once).
constexpr int kAnswerMs = 1000;

struct Table {
  uint8_t nonce[kNonceBytes] = {};
  std::vector<int> survivors;
  std::string root_address;
};

std::string EncodeTable(const Table& table);
Status DecodeTable(const std::string& body, int old_nranks, Table* table);

// A membership: n u32, then n old ranks u32, ascending.
std::string EncodeRanks(const std::vector<int>& ranks);
Status DecodeRanks(const std::string& body, int old_nranks, std::vector<int>* ranks);
// "{0,1,3}".
std::string FormatRanks(const std::vector<int>& ranks);
// What a rank that `told_by` told it was left out of `agreed` returns.
Status LeftOutError(int rank, const std::vector<int>& agreed, int told_by);

// The new communicator's secret: SipHash-128 of the nonce keyed by the old
// secret, so only members of the old communicator can derive it.
void DeriveSecret(const uint8_t old_secret[16], const uint8_t nonce[kNonceBytes], uint8_t out[16]);

// What one connection attempt to a rank's recovery listener tells.
// kGone: refused; the listener has existed since the communicator was
// created and stays open while its rank is in the lineage, so its rank has
// left for good. kUnreachable: no answer within kProbeWindowMs, or no
// route; the rank may live behind a partition, so it is never counted gone.
enum class ProbeState { kPending, kConnected, kGone, kUnreachable };

// One attempt, no retry, waiting at most kProbeWindowMs (less when
// `deadline` comes first: then chorusTimeout). `connected` holds the
// connection when kConnected.
Status Probe(const std::string& address, Deadline deadline, ProbeState* state, Socket* connected);

// The same attempt without waiting, for a root that keeps serving while it
// probes: kPending leaves `attempt` connecting (poll it for POLLOUT, then
// FinishProbe); the caller gives up on it after kProbeWindowMs.
Status StartProbe(const std::string& address, Socket* attempt, ProbeState* state);
Status FinishProbe(Socket* attempt, ProbeState* state);

struct Reply {
  uint32_t code = 0;
  std::string body;
};

// Asker side: the handshake and the request from `endpoint.rank`. A timeout
// means nobody accepted the connection (it waits in the listener's queue).
Status SendRequest(const RecoveryEndpoint& endpoint, const Socket& socket, Deadline deadline);
// Reads one reply (code checked to be a known one).
Status ReadReply(const Socket& socket, Deadline deadline, Reply* reply);

// Listener side. Connections authenticate concurrently: an acceptor with
// these options admits each one with its whole request (strangers and
// abandoned connections are dropped and logged at TRACE as `where`).
AcceptorOptions RequestAcceptorOptions(const RecoveryEndpoint& endpoint, const std::string& where);
// Checks an admitted request for this communicator; `*asker` is the asker's
// old rank. A malformed one is answered with the error (before `deadline`)
// and the error returned: the caller drops the connection.
Status CheckRequest(const RecoveryEndpoint& endpoint, const AdmittedConnection& connection, Deadline deadline,
                    int* asker);

// Sends a reply (header then body) before `deadline`.
Status SendReply(const Socket& socket, uint32_t code, const std::string& body, Deadline deadline);

// The root's side: `endpoint.rank` found every lower rank gone (refused:
// `gone_below`) or alive but silent (passed over). When a rank it asks says
// it was left out of an agreed membership, that membership is
// `*left_out_of` (and the result chorusRemoteError).
Status ServeAsRoot(RecoveryEndpoint& endpoint, Deadline gather_deadline, Deadline deadline,
                   const std::vector<bool>& gone_below, ShrinkOutcome* outcome, std::vector<int>* left_out_of);

// Whether `survivors` may form a communicator without the ranks of the old
// one that are neither in it nor gone (`gone`, by old rank): they must hold
// more than half of the ranks not gone, or exactly half with the lowest of
// them. Two disjoint groups can then never both form while their members
// hold the lineage (neither counts the other's members gone). OK when no
// live rank is left out.
Status CheckMajority(const std::vector<int>& survivors, const std::vector<bool>& gone, int root);

// Answers every request on `endpoint`'s listener with `agreed` (a rank
// outside it: kReplyLeftOut; a member: kReplyNotShrinking) from a thread of
// its own, until destroyed. The endpoint must outlive it, and nothing else
// may use the listener meanwhile.
class Responder {
 public:
  static Status Start(const RecoveryEndpoint& endpoint, std::vector<int> agreed, std::unique_ptr<Responder>* out);
  // Wakes the thread, cuts short a request being answered, joins.
  ~Responder();
  Responder(const Responder&) = delete;
  Responder& operator=(const Responder&) = delete;

 private:
  Responder(const RecoveryEndpoint& endpoint, std::vector<int> agreed, int wake_fd);
  void Serve();
  void Answer(AdmittedConnection connection);

  const RecoveryEndpoint& endpoint_;
  const std::vector<int> agreed_;
  const int wake_fd_;  // eventfd: readable once stopping
  std::mutex mutex_;
  bool stopping_ = false;
  int answering_fd_ = -1;  // the connection being answered, shut down on stop
  std::thread thread_;
};

}  // namespace chorus::shrink
