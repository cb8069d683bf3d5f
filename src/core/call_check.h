// Mismatched-call detection (CHORUS_CHECK=1). Before any data of a launch
// moves, every rank shares a fixed-size summary of the launch's collectives
// with every peer through the communicator's exchange: the first
// collective's kind, count, datatype, op and root, how many collectives the
// launch holds, a digest of all of them, and the sequence number of the
// first (collectives are numbered 1, 2, ... per communicator). When every
// summary is the same, the launch goes on. Otherwise every rank, holding the
// same summaries, reaches the same verdict: the launch is rejected on every
// rank with chorusInvalidUsage naming the first difference with both sides,
// e.g. "rank 3 called AllReduce(count=1024, float32, sum) as call #57; rank 0
// called Broadcast(count=1024, uint8, root 0)". When a launch holds several
// collectives (a group) and its first ones agree, a second exchange of every
// collective of the launch finds the first that differs. Nothing has moved,
// so the communicator stays usable, and the sequence numbers stay alike
// (each rank advances by the longest launch).
//
// Point-to-point operations are not checked (their pairing is per peer, not
// per communicator): a launch without collectives is not exchanged, and a
// send/recv mismatch still surfaces as the transport's message mismatch or
// a timeout. PreMulSum scalars may differ per rank and are not compared.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "core/operation.h"

namespace chorus {

constexpr size_t kCallSummaryBytes = 64;
constexpr size_t kCallEntryBytes = 16;
// The longest launch whose collectives are compared one by one (a board
// slot's worth); past it a difference is reported for the launch as a whole.
constexpr size_t kMaxComparedCalls = 16384;

// One collective as the check compares it.
struct CallEntry {
  uint8_t coll = 0;   // Collective, or kNoCall
  uint8_t dtype = 0;  // chorusDataType_t
  uint8_t op = 0;     // chorusRedOp_t of the call (kPreMulSum for a PreMulSum op), or kNoOp
  int32_t root = 0;   // 0 for collectives without a root
  uint64_t count = 0;

  static constexpr uint8_t kNoCall = 0xff;     // padding past a shorter launch
  static constexpr uint8_t kNoOp = 0xff;       // collectives that do not reduce
  static constexpr uint8_t kPreMulSum = 0xfe;  // any PreMulSum op

  bool operator==(const CallEntry& other) const {
    return coll == other.coll && dtype == other.dtype && op == other.op && root == other.root &&
           count == other.count;
  }
  bool operator!=(const CallEntry& other) const { return !(*this == other); }
};

// The names the C API uses for a collective ("AllReduce") and a datatype
// (chorus.h's enumerator without its prefix: "float32"); values from peers
// may be anything, which reads "unknown collective" or "unknown type".
const char* ApiCallName(uint8_t coll);
const char* ApiTypeName(uint8_t dtype);

CallEntry DescribeCall(const Operation& op);
// "AllReduce(count=1024, float32, sum)", "Broadcast(count=8, uint8, root 0)".
std::string FormatCall(const CallEntry& entry);
void EncodeCall(const CallEntry& entry, uint8_t out[kCallEntryBytes]);
CallEntry DecodeCall(const uint8_t in[kCallEntryBytes]);

// Every rank's `bytes` bytes in rank order into `all` (nranks * bytes); the
// same bytes on every rank, through the communicator's transport or board.
using CheckExchange = std::function<Status(const uint8_t* mine, size_t bytes, uint8_t* all)>;

class CallChecker {
 public:
  CallChecker(int rank, int nranks);

  // Checks the collectives of `ops` (none: nothing to check, Ok) against
  // every rank's. Ok when they match; chorusInvalidUsage with `*mismatch`
  // set when they do not (the same on every rank); the exchange's error
  // otherwise (a real failure: a peer died, or never made this call).
  Status Check(const Operation* ops, size_t nops, const CheckExchange& exchange, bool* mismatch);

  // The sequence number the next collective gets.
  uint64_t next_call() const { return next_call_; }

 private:
  void Summarize(uint8_t out[kCallSummaryBytes]) const;
  // The verdict from every rank's summary (`*compare_calls`: the launches
  // must be compared call by call).
  Status CompareSummaries(bool* compare_calls, size_t* longest) const;
  // Exchanges every collective of the launch (padded to `longest`) and sets
  // `*verdict`; returns the exchange's error.
  Status CompareCalls(const CheckExchange& exchange, size_t longest, Status* verdict);
  Status CompareEntries(size_t compared) const;
  Status Mismatch(int rank, size_t index, const CallEntry& theirs, const CallEntry& ours) const;
  uint64_t FirstCallOf(int rank) const;
  uint32_t CallsOf(int rank) const;

  const int rank_;
  const int nranks_;
  uint64_t next_call_ = 1;
  // Reused by every launch: a warm check allocates nothing.
  std::vector<CallEntry> calls_;
  std::vector<uint8_t> summaries_;  // nranks * kCallSummaryBytes
  std::vector<uint8_t> mine_, all_;  // the call-by-call exchange
};

}  // namespace chorus
