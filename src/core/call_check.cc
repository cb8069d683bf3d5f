#include "core/call_check.h"

#include <algorithm>
#include <cstring>

namespace chorus {
namespace {

constexpr uint32_t kSummaryMagic = 0x314b4843;  // "CHK1"

// Summary layout (little-endian): magic u32, collectives in the launch u32,
// sequence number of the first u64, digest of all u64, the first one
// (kCallEntryBytes), zeros.
constexpr size_t kCallsAt = 4;
constexpr size_t kFirstCallAt = 8;
constexpr size_t kDigestAt = 16;
constexpr size_t kFirstEntryAt = 24;
static_assert(kFirstEntryAt + kCallEntryBytes <= kCallSummaryBytes);

void PutU32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void PutU64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t GetU32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
uint64_t GetU64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

bool Reduces(Collective coll) {
  return coll == Collective::kAllReduce || coll == Collective::kReduce || coll == Collective::kReduceScatter;
}

bool Rooted(Collective coll) {
  return coll == Collective::kBroadcast || coll == Collective::kReduce || coll == Collective::kGather ||
         coll == Collective::kScatter;
}

// FNV-1a, 64 bits.
uint64_t Digest(const std::vector<CallEntry>& calls) {
  uint64_t hash = 0xcbf29ce484222325ull;
  uint8_t bytes[kCallEntryBytes];
  for (const CallEntry& call : calls) {
    EncodeCall(call, bytes);
    for (uint8_t byte : bytes) hash = (hash ^ byte) * 0x100000001b3ull;
  }
  return hash;
}

}  // namespace

const char* ApiCallName(uint8_t coll) {
  switch (static_cast<Collective>(coll)) {
    case Collective::kAllReduce: return "AllReduce";
    case Collective::kBroadcast: return "Broadcast";
    case Collective::kReduce: return "Reduce";
    case Collective::kAllGather: return "AllGather";
    case Collective::kReduceScatter: return "ReduceScatter";
    case Collective::kAllToAll: return "AlltoAll";
    case Collective::kGather: return "Gather";
    case Collective::kScatter: return "Scatter";
    case Collective::kCount: break;
  }
  return "unknown collective";
}

const char* ApiTypeName(uint8_t dtype) {
  switch (dtype) {
    case chorusInt8: return "int8";
    case chorusUint8: return "uint8";
    case chorusInt32: return "int32";
    case chorusUint32: return "uint32";
    case chorusInt64: return "int64";
    case chorusUint64: return "uint64";
    case chorusFloat16: return "float16";
    case chorusFloat32: return "float32";
    case chorusFloat64: return "float64";
    case chorusBfloat16: return "bfloat16";
    default: return "unknown type";
  }
}

const char* OpName(uint8_t op) {
  switch (op) {
    case chorusSum: return "sum";
    case chorusProd: return "prod";
    case chorusMax: return "max";
    case chorusMin: return "min";
    case chorusAvg: return "avg";
    case CallEntry::kPreMulSum: return "premulsum";
    default: return "unknown op";
  }
}


CallEntry DescribeCall(const Operation& op) {
  const CollectiveArgs& args = op.args;
  CallEntry entry;
  entry.coll = static_cast<uint8_t>(args.coll);
  entry.dtype = static_cast<uint8_t>(args.dtype);
  entry.op = CallEntry::kNoOp;
  if (Reduces(args.coll)) {
    entry.op = op.premultiply ? CallEntry::kPreMulSum
               : op.average   ? static_cast<uint8_t>(chorusAvg)
                              : static_cast<uint8_t>(args.op);
  }
  entry.root = Rooted(args.coll) ? args.root : 0;
  entry.count = args.count;
  return entry;
}

std::string FormatCall(const CallEntry& entry) {
  std::string text = StrCat(ApiCallName(entry.coll), "(count=", entry.count, ", ", ApiTypeName(entry.dtype));
  if (entry.op != CallEntry::kNoOp) text += StrCat(", ", OpName(entry.op));
  if (Rooted(static_cast<Collective>(entry.coll))) text += StrCat(", root ", entry.root);
  return text + ")";
}

void EncodeCall(const CallEntry& entry, uint8_t out[kCallEntryBytes]) {
  out[0] = entry.coll;
  out[1] = entry.dtype;
  out[2] = entry.op;
  out[3] = 0;
  PutU32(out + 4, static_cast<uint32_t>(entry.root));
  PutU64(out + 8, entry.count);
}

CallEntry DecodeCall(const uint8_t in[kCallEntryBytes]) {
  CallEntry entry;
  entry.coll = in[0];
  entry.dtype = in[1];
  entry.op = in[2];
  entry.root = static_cast<int32_t>(GetU32(in + 4));
  entry.count = GetU64(in + 8);
  return entry;
}

CallChecker::CallChecker(int rank, int nranks)
    : rank_(rank), nranks_(nranks), summaries_(static_cast<size_t>(nranks) * kCallSummaryBytes) {}

void CallChecker::Summarize(uint8_t out[kCallSummaryBytes]) const {
  std::memset(out, 0, kCallSummaryBytes);
  PutU32(out, kSummaryMagic);
  PutU32(out + kCallsAt, static_cast<uint32_t>(calls_.size()));
  PutU64(out + kFirstCallAt, next_call_);
  PutU64(out + kDigestAt, Digest(calls_));
  EncodeCall(calls_.front(), out + kFirstEntryAt);
}

uint64_t CallChecker::FirstCallOf(int rank) const {
  return GetU64(summaries_.data() + static_cast<size_t>(rank) * kCallSummaryBytes + kFirstCallAt);
}

uint32_t CallChecker::CallsOf(int rank) const {
  return GetU32(summaries_.data() + static_cast<size_t>(rank) * kCallSummaryBytes + kCallsAt);
}

Status CallChecker::Check(const Operation* ops, size_t nops, const CheckExchange& exchange, bool* mismatch) {
  *mismatch = false;
  calls_.clear();
  for (size_t i = 0; i < nops; ++i) {
    if (ops[i].kind == Operation::Kind::kCollective) calls_.push_back(DescribeCall(ops[i]));
  }
  if (calls_.empty() || nranks_ == 1) {
    next_call_ += calls_.size();
    return Status::Ok();
  }
  uint8_t mine[kCallSummaryBytes];
  Summarize(mine);
  // The context is built only on failure: a warm check allocates nothing.
  Status shared = exchange(mine, sizeof(mine), summaries_.data());
  if (!shared.ok()) {
    return shared.WithContext(StrCat("CHORUS_CHECK: rank ", rank_, " sharing call #", next_call_, " (",
                                     FormatCall(calls_.front()), ") with the other ranks"));
  }
  bool compare_calls = false;
  size_t longest = calls_.size();
  Status verdict = CompareSummaries(&compare_calls, &longest);
  if (compare_calls) CHORUS_RETURN_IF_ERROR(CompareCalls(exchange, longest, &verdict));
  if (verdict.ok()) {
    next_call_ += calls_.size();
    return verdict;
  }
  if (verdict.code() == chorusInvalidUsage) {
    // Every rank rejects this launch: number the next one alike everywhere.
    *mismatch = true;
    next_call_ += longest;
  }
  return verdict;
}

Status CallChecker::CompareSummaries(bool* compare_calls, size_t* longest) const {
  *compare_calls = false;
  const uint8_t* first = summaries_.data();
  bool alike = true;
  bool single_calls = true;
  for (int rank = 0; rank < nranks_; ++rank) {
    const uint8_t* summary = first + static_cast<size_t>(rank) * kCallSummaryBytes;
    if (GetU32(summary) != kSummaryMagic) {
      return InternalError("CHORUS_CHECK: rank ", rank, " sent a malformed call summary (is CHORUS_CHECK=1 set on ",
                           "every rank?)");
    }
    alike = alike && std::memcmp(summary, first, kCallSummaryBytes) == 0;
    *longest = std::max<size_t>(*longest, CallsOf(rank));
    single_calls = single_calls && CallsOf(rank) == 1;
  }
  if (alike) return Status::Ok();
  if (!single_calls) {
    *compare_calls = true;
    return Status::Ok();
  }
  const CallEntry ours = DecodeCall(first + kFirstEntryAt);
  for (int rank = 1; rank < nranks_; ++rank) {
    const uint8_t* summary = first + static_cast<size_t>(rank) * kCallSummaryBytes;
    if (std::memcmp(summary, first, kCallSummaryBytes) != 0) {
      return Mismatch(rank, 0, DecodeCall(summary + kFirstEntryAt), ours);
    }
  }
  return InternalError("CHORUS_CHECK: call summaries differ, yet each equals rank 0's");
}

Status CallChecker::CompareCalls(const CheckExchange& exchange, size_t longest, Status* verdict) {
  const size_t compared = std::min(longest, kMaxComparedCalls);
  const size_t bytes = compared * kCallEntryBytes;
  mine_.assign(bytes, 0);
  CallEntry none;
  none.coll = CallEntry::kNoCall;
  for (size_t i = 0; i < compared; ++i) EncodeCall(i < calls_.size() ? calls_[i] : none, mine_.data() + i * kCallEntryBytes);
  all_.resize(bytes * static_cast<size_t>(nranks_));
  Status shared = exchange(mine_.data(), bytes, all_.data());
  if (!shared.ok()) {
    return shared.WithContext(StrCat("CHORUS_CHECK: rank ", rank_, " sharing calls #", next_call_, "..",
                                     next_call_ + calls_.size() - 1, " with the other ranks"));
  }
  *verdict = CompareEntries(compared);
  return Status::Ok();
}

Status CallChecker::CompareEntries(size_t compared) const {
  const size_t bytes = compared * kCallEntryBytes;
  for (size_t i = 0; i < compared; ++i) {
    const CallEntry ours = DecodeCall(all_.data() + i * kCallEntryBytes);
    for (int rank = 1; rank < nranks_; ++rank) {
      const CallEntry theirs = DecodeCall(all_.data() + static_cast<size_t>(rank) * bytes + i * kCallEntryBytes);
      if (theirs != ours || FirstCallOf(rank) != FirstCallOf(0)) return Mismatch(rank, i, theirs, ours);
    }
  }
  for (int rank = 1; rank < nranks_; ++rank) {
    if (std::memcmp(summaries_.data() + static_cast<size_t>(rank) * kCallSummaryBytes, summaries_.data(),
                    kCallSummaryBytes) != 0) {
      return InvalidUsage("mismatched collective calls (CHORUS_CHECK=1): the group launched by rank ", rank,
                          " as calls #", FirstCallOf(rank), " on differs from rank 0's after the first ", compared,
                          " collectives, which agree; the group was rejected on every rank and nothing was moved");
    }
  }
  return InternalError("CHORUS_CHECK: call summaries differ, yet each equals rank 0's");
}

Status CallChecker::Mismatch(int rank, size_t index, const CallEntry& theirs, const CallEntry& ours) const {
  auto describe = [&](int who, const CallEntry& call) {
    const uint32_t calls = CallsOf(who);
    if (call.coll == CallEntry::kNoCall) {
      return StrCat("nothing more (its group holds ", calls, " collective", calls == 1 ? "" : "s", ")");
    }
    std::string text = FormatCall(call);
    if (calls > 1) text += StrCat(" (", index + 1, " of a group of ", calls, ")");
    return text;
  };
  const uint64_t their_call = FirstCallOf(rank) + index;
  const uint64_t our_call = FirstCallOf(0) + index;
  std::string others;
  int differing = 0;
  for (int other = rank + 1; other < nranks_; ++other) {
    const uint8_t* summary = summaries_.data() + static_cast<size_t>(other) * kCallSummaryBytes;
    if (std::memcmp(summary, summaries_.data(), kCallSummaryBytes) == 0) continue;
    if (++differing <= 8) others += StrCat(", ", other);
  }
  if (differing > 8) others += ", ...";
  return InvalidUsage("mismatched collective calls (CHORUS_CHECK=1): rank ", rank, " called ", describe(rank, theirs),
                      " as call #", their_call, "; rank 0 called ", describe(0, ours),
                      our_call == their_call ? std::string() : StrCat(" as call #", our_call),
                      differing == 0 ? std::string() : StrCat(" (ranks ", rank, others, " differ from rank 0)"),
                      ". The call was rejected on every rank and nothing was moved");
}

}  // namespace chorus
