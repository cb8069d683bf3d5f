// The mismatched-call check (CHORUS_CHECK=1) as it reads its peers: every
// peer's call summary and, for groups, its call-by-call entries come from
// the input. A peer's bytes are ours XORed with input bytes, so an input of
// zeros is a peer that agrees and each flipped bit is one lie.
//
// Properties: the check never crashes and answers only Ok (every peer sent
// exactly our bytes), chorusInvalidUsage with the mismatch flag and a
// message naming a rank, or chorusInternalError for a malformed summary; the
// check fails exactly when some peer changed a byte; the call numbering
// advances by at least our launch; every decoded entry
// formats and encodes back to its bytes.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/call_check.h"
#include "fuzz_check.h"

namespace chorus {
namespace {

constexpr Collective kCollectives[] = {Collective::kAllReduce, Collective::kBroadcast, Collective::kReduce,
                                       Collective::kAllGather, Collective::kReduceScatter, Collective::kAllToAll,
                                       Collective::kGather, Collective::kScatter};
constexpr DataType kTypes[] = {chorusInt8,  chorusUint8,   chorusInt32,   chorusUint32,  chorusInt64,
                               chorusUint64, chorusFloat16, chorusFloat32, chorusFloat64, chorusBfloat16};
constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMax, ReduceOp::kMin};

Operation FuzzedCollective(FuzzedDataProvider& input, int nranks) {
  Operation op;
  op.kind = Operation::Kind::kCollective;
  op.args.coll = input.PickValueInArray(kCollectives);
  op.args.dtype = input.PickValueInArray(kTypes);
  op.args.op = input.PickValueInArray(kOps);
  op.args.count = input.ConsumeIntegral<uint32_t>();
  op.args.root = input.ConsumeIntegralInRange<int>(0, nranks - 1);
  op.args.nranks = nranks;
  op.average = input.ConsumeBool();
  op.premultiply = !op.average && input.ConsumeBool();
  return op;
}

// Every peer's `bytes` bytes are ours XORed with the next input bytes
// (zeros past the input's end: a peer that agrees).
class LyingPeers {
 public:
  LyingPeers(int rank, int nranks, std::string lies) : rank_(rank), nranks_(nranks), lies_(std::move(lies)) {}

  Status Exchange(const uint8_t* mine, size_t bytes, uint8_t* all) {
    for (int peer = 0; peer < nranks_; ++peer) {
      uint8_t* slot = all + static_cast<size_t>(peer) * bytes;
      std::memcpy(slot, mine, bytes);
      if (peer == rank_) continue;
      for (size_t i = 0; i < bytes && used_ < lies_.size(); ++i, ++used_) {
        const uint8_t lie = static_cast<uint8_t>(lies_[used_]);
        slot[i] ^= lie;
        lied_ = lied_ || lie != 0;
      }
    }
    return Status::Ok();
  }

  bool lied() const { return lied_; }

 private:
  const int rank_;
  const int nranks_;
  const std::string lies_;
  size_t used_ = 0;
  bool lied_ = false;
};

void CheckEntryRoundTrip(const uint8_t bytes[kCallEntryBytes]) {
  const CallEntry entry = DecodeCall(bytes);
  FUZZ_CHECK(!FormatCall(entry).empty());
  uint8_t again[kCallEntryBytes];
  EncodeCall(entry, again);
  FUZZ_CHECK(std::memcmp(again, bytes, 3) == 0);  // byte 3 is reserved: always written as 0
  FUZZ_CHECK(again[3] == 0);
  FUZZ_CHECK(std::memcmp(again + 4, bytes + 4, kCallEntryBytes - 4) == 0);
}

}  // namespace
}  // namespace chorus

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chorus;
  FuzzedDataProvider input(data, size);
  const int nranks = input.ConsumeIntegralInRange<int>(2, 9);
  const int rank = input.ConsumeIntegralInRange<int>(0, nranks - 1);
  const int calls = input.ConsumeIntegralInRange<int>(1, 4);
  std::vector<Operation> ops;
  for (int i = 0; i < calls; ++i) ops.push_back(FuzzedCollective(input, nranks));
  // A point-to-point operation is never compared: it may sit in any launch.
  if (input.ConsumeBool()) {
    Operation send;
    send.kind = Operation::Kind::kSend;
    send.peer = (rank + 1) % nranks;
    ops.insert(ops.begin() + input.ConsumeIntegralInRange<size_t>(0, ops.size()), send);
  }
  const std::string lies = input.ConsumeRemainingBytesAsString();

  for (size_t at = 0; at + kCallEntryBytes <= lies.size() && at < 4 * kCallEntryBytes; at += kCallEntryBytes) {
    uint8_t entry[kCallEntryBytes];
    std::memcpy(entry, lies.data() + at, kCallEntryBytes);
    CheckEntryRoundTrip(entry);
  }

  CallChecker checker(rank, nranks);
  LyingPeers peers(rank, nranks, lies);
  bool mismatch = false;
  const uint64_t first = checker.next_call();
  const Status status = checker.Check(
      ops.data(), ops.size(),
      [&](const uint8_t* mine, size_t bytes, uint8_t* all) { return peers.Exchange(mine, bytes, all); }, &mismatch);

  // Any byte a peer changed in what it was asked for is a difference.
  FUZZ_CHECK(status.ok() == !peers.lied());
  if (status.ok()) {
    FUZZ_CHECK(!mismatch);
    FUZZ_CHECK(checker.next_call() == first + static_cast<uint64_t>(calls));
  } else if (status.code() == chorusInvalidUsage) {
    FUZZ_CHECK(mismatch);
    FUZZ_CHECK(checker.next_call() >= first + static_cast<uint64_t>(calls));
    FUZZ_CHECK(status.message().find("mismatched collective calls") != std::string::npos);
    FUZZ_CHECK(status.message().find("rank ") != std::string::npos);
  } else {
    FUZZ_CHECK(status.code() == chorusInternalError);
    FUZZ_CHECK(!mismatch);
    FUZZ_CHECK(checker.next_call() == first);
  }
  return 0;
}
