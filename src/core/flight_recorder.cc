#include "core/flight_recorder.h"

#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <thread>

#include "base/log.h"
#include "core/call_check.h"

namespace chorus {

namespace {

constexpr size_t kPathChars = 24;
constexpr size_t kErrorChars = 200;
enum : uint8_t { kCollectiveEntry, kSendEntry, kRecvEntry };

const char* StateName(FlightRecorder::State state) {
  switch (state) {
    case FlightRecorder::State::kQueued: return "queued";
    case FlightRecorder::State::kRunning: return "running";
    case FlightRecorder::State::kDone: return "done";
    case FlightRecorder::State::kFailed: return "failed";
  }
  return "unknown";
}

// `text` as a JSON string body.
void AppendJsonString(std::string* out, const char* text) {
  for (const char* c = text; *c != '\0'; ++c) {
    const unsigned char byte = static_cast<unsigned char>(*c);
    if (byte == '"' || byte == '\\') {
      out->push_back('\\');
      out->push_back(*c);
    } else if (byte < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", byte);
      out->append(escaped);
    } else {
      out->push_back(*c);
    }
  }
}

std::string HostName() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  return host;
}

void CopyText(char* dst, size_t size, const char* src) {
  size_t n = strnlen(src, size - 1);
  std::memcpy(dst, src, n);
  dst[n] = '\0';
}

}  // namespace

// The op names an entry stores as a one-byte code.
constexpr const char* kOpNames[] = {"sum", "prod", "max", "min", "avg", "premulsum", ""};
constexpr uint8_t kAvgCode = 4, kPreMulSumCode = 5, kNoOpCode = 6;
static_assert(static_cast<int>(ReduceOp::kSum) == 0 && static_cast<int>(ReduceOp::kProd) == 1 &&
                  static_cast<int>(ReduceOp::kMax) == 2 && static_cast<int>(ReduceOp::kMin) == 3,
              "kOpNames follows ReduceOp");

// Two cache lines: the first holds every field a call writes (the path as a
// pointer to a static name, or to the copy in the second line). What only
// failures write lives apart (Failure). So a call on the board touches one
// line of a 128-byte slot, a schedule's two, and the ring of 256 is 32 KiB:
// cold entry lines cost more than the rest of the recording.
struct alignas(64) FlightRecorder::Entry {
  // Odd while the plain fields below are being written (16 bits: a reader
  // compares it across one copy).
  std::atomic<uint16_t> version{0};
  std::atomic<State> state{State::kQueued};
  uint8_t kind = kCollectiveEntry;
  Collective coll = Collective::kAllReduce;
  uint8_t dtype = chorusFloat32;
  uint8_t redop = kNoOpCode;  // index into kOpNames
  int32_t root = -1;
  int32_t peer = -1;
  uint64_t seq = 0;
  uint64_t count = 0;
  int64_t enqueued_ns = 0;
  // Change while the entry is live; read without the version.
  std::atomic<int64_t> started_ns{0};
  std::atomic<int64_t> finished_ns{0};
  const char* path = "";  // a static name, or copied_path
  char copied_path[kPathChars] = {};
};

// What a failed entry keeps; valid while its entry's state is kFailed.
struct FlightRecorder::Failure {
  WaitingPeers waiting;
  char error[kErrorChars] = {};
};

// A write bracket: the entry's version is odd while its plain fields are
// written and a new even value after. The values come from a counter of the
// recorder's rather than from the entry, so that opening a bracket stores to
// the entry's line without loading it first: the line is usually cold (the
// ring is walked once per 256 calls), and a load would wait for it.
void FlightRecorder::BeginWrite(Entry& entry) {
  entry.version.store(static_cast<uint16_t>(last_version_ + 1), std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
}
void FlightRecorder::EndWrite(Entry& entry) {
  last_version_ = static_cast<uint16_t>(last_version_ + 2);
  entry.version.store(last_version_, std::memory_order_release);
}

inline FlightRecorder::Entry& FlightRecorder::LaunchEntry(size_t i) const {
  size_t slot = launch_slot_ + i;
  if (slot >= capacity_) slot -= capacity_;
  return entries_[slot];
}

FlightRecorder::FlightRecorder(const TraceIdentity& identity, size_t capacity, std::string file_pattern)
    : identity_(identity),
      capacity_(capacity),
      file_pattern_(std::move(file_pattern)),
      entries_(new Entry[capacity]),
      failures_(new Failure[capacity]) {}

FlightRecorder::~FlightRecorder() = default;

int64_t FlightRecorder::NowNs() {
  // The kernel's tick-resolution CLOCK_MONOTONIC: a read of the vDSO page,
  // about a quarter of a precise read (which the TSC scaling makes ~50 ns on
  // a VM, most of the recorder's cost on a 1-3 us allreduce). A tick (1-4
  // ms) is far finer than the hangs the recorder is for.
  timespec now;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
}


void FlightRecorder::BeginLaunch(const Operation* ops, size_t nops) {
  const uint64_t recorded = recorded_.load(std::memory_order_relaxed);
  const int64_t now = NowNs();
  launch_began_ns_ = now;
  // A launch of more operations than the ring holds keeps its last ones
  // (their sequence numbers still count the others).
  launch_skipped_ = nops > capacity_ ? nops - capacity_ : 0;
  launch_count_ = nops - launch_skipped_;
  launch_slot_ = next_slot_;
  for (size_t i = 0; i < nops; ++i) {
    const Operation& op = ops[i];
    const bool collective = op.kind == Operation::Kind::kCollective;
    const uint64_t seq = collective ? ++collectives_ : ++point_to_point_;
    if (i < launch_skipped_) continue;
    Entry& entry = entries_[next_slot_];
    next_slot_ = next_slot_ + 1 == capacity_ ? 0 : next_slot_ + 1;
    BeginWrite(entry);
    entry.seq = seq;
    if (collective) {
      entry.kind = kCollectiveEntry;
      entry.coll = op.args.coll;
      entry.count = op.args.count;
      entry.dtype = static_cast<uint8_t>(op.args.dtype);
      entry.redop = op.premultiply ? kPreMulSumCode : op.average ? kAvgCode : static_cast<uint8_t>(op.args.op);
      const bool rooted = op.args.coll == Collective::kBroadcast || op.args.coll == Collective::kReduce ||
                          op.args.coll == Collective::kGather || op.args.coll == Collective::kScatter;
      entry.root = rooted ? op.args.root : -1;
      entry.peer = -1;
    } else {
      entry.kind = op.kind == Operation::Kind::kSend ? kSendEntry : kRecvEntry;
      entry.count = op.bytes / DataTypeSize(op.dtype);
      entry.dtype = static_cast<uint8_t>(op.dtype);
      entry.redop = kNoOpCode;
      entry.root = -1;
      entry.peer = op.peer;
    }
    entry.enqueued_ns = op.enqueued_ns != 0 ? op.enqueued_ns : now;
    entry.path = "";
    entry.state.store(State::kQueued, std::memory_order_relaxed);
    entry.started_ns.store(0, std::memory_order_relaxed);
    entry.finished_ns.store(0, std::memory_order_relaxed);
    EndWrite(entry);
  }
  recorded_.store(recorded + launch_count_, std::memory_order_release);
}

void FlightRecorder::SetPath(size_t index, const char* path) {
  if (index < launch_skipped_ || index - launch_skipped_ >= launch_count_) return;
  Entry& entry = LaunchEntry(index - launch_skipped_);
  BeginWrite(entry);
  CopyText(entry.copied_path, kPathChars, path);
  entry.path = entry.copied_path;
  EndWrite(entry);
}

void FlightRecorder::SetStaticPath(size_t index, const char* path) {
  if (index < launch_skipped_ || index - launch_skipped_ >= launch_count_) return;
  Entry& entry = LaunchEntry(index - launch_skipped_);
  BeginWrite(entry);
  entry.path = path;
  EndWrite(entry);
}

void FlightRecorder::MarkStarted(bool read_clock) {
  const int64_t now = read_clock ? NowNs() : launch_began_ns_;
  for (size_t i = 0; i < launch_count_; ++i) {
    Entry& entry = LaunchEntry(i);
    entry.started_ns.store(now, std::memory_order_relaxed);
    entry.state.store(State::kRunning, std::memory_order_release);
  }
}

void FlightRecorder::EndLaunch(const Status& status, const WaitingPeers* waiting) {
  const int64_t now = NowNs();
  for (size_t i = 0; i < launch_count_; ++i) {
    Entry& entry = LaunchEntry(i);
    if (!status.ok()) {
      BeginWrite(entry);
      Failure& failure = failures_[&entry - entries_.get()];
      CopyText(failure.error, kErrorChars, status.message().c_str());
      if (waiting != nullptr) failure.waiting = *waiting;
      else failure.waiting.Clear();
      EndWrite(entry);
    }
    entry.finished_ns.store(now, std::memory_order_relaxed);
    entry.state.store(status.ok() ? State::kDone : State::kFailed, std::memory_order_release);
  }
  launch_count_ = 0;
  // The next launch's entry line, fetched for writing now, while the caller
  // is between calls: its stores then hit the cache instead of waiting for
  // a line last touched a ring's length ago (the next locked instruction,
  // the turn's or a mutex's, would drain them).
  __builtin_prefetch(&entries_[next_slot_], 1, 3);
}

std::string FlightRecorder::ExpandPattern(const std::string& pattern) const {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      out.push_back(pattern[i]);
      continue;
    }
    switch (pattern[++i]) {
      case 'h': out += HostName(); break;
      case 'p': out += std::to_string(getpid()); break;
      case 'r': out += std::to_string(identity_.rank); break;
      case '%': out.push_back('%'); break;
      default: out.push_back('%'); out.push_back(pattern[i]); break;
    }
  }
  return out;
}

Status FlightRecorder::Dump(const std::string& path, const char* reason, uint64_t waiting_turn) const {
  if (path.empty()) return InvalidArgument("no trace file: pass a path or set CHORUS_TRACE_FILE");
  // One anchor pair: entries carry steady-clock times, the reader maps them
  // to wall-clock time through it.
  const int64_t steady_anchor =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count();
  const int64_t wall_anchor_us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  const uint64_t recorded = recorded_.load(std::memory_order_acquire);
  const uint64_t first = recorded > capacity_ ? recorded - capacity_ : 0;
  char hash[17];
  std::snprintf(hash, sizeof(hash), "%016llx", static_cast<unsigned long long>(identity_.comm_hash));
  std::string text;
  text.reserve(256 + (recorded - first) * 320);
  text += StrCat("{\"chorus_trace\":1,\"rank\":", identity_.rank, ",\"nranks\":", identity_.nranks, ",\"host\":\"");
  AppendJsonString(&text, HostName().c_str());
  text += StrCat("\",\"pid\":", getpid(), ",\"comm\":\"", hash, "\",\"reason\":\"");
  AppendJsonString(&text, reason);
  text += StrCat("\",\"wall_anchor_us\":", wall_anchor_us, ",\"steady_anchor_ns\":", steady_anchor,
                 ",\"capacity\":", capacity_, ",\"recorded\":", recorded, ",\"waiting_turn\":", waiting_turn, "}\n");
  for (uint64_t index = first; index < recorded; ++index) {
    const Entry& live = entries_[index % capacity_];
    // A copy taken while no write was under way (a writer lapping the
    // reader is retried, then skipped).
    Entry copy;
    Failure failure;
    bool consistent = false;
    for (int attempt = 0; attempt < 4 && !consistent; ++attempt) {
      const uint32_t before = live.version.load(std::memory_order_acquire);
      if (before % 2 != 0) continue;
      copy.seq = live.seq;
      copy.kind = live.kind;
      copy.coll = live.coll;
      copy.dtype = live.dtype;
      copy.redop = live.redop;
      copy.root = live.root;
      copy.peer = live.peer;
      copy.count = live.count;
      copy.enqueued_ns = live.enqueued_ns;
      std::memcpy(copy.copied_path, live.copied_path, sizeof(copy.copied_path));
      copy.path = live.path == live.copied_path ? copy.copied_path : live.path;
      const Failure& live_failure = failures_[index % capacity_];
      failure.waiting = live_failure.waiting;
      std::memcpy(failure.error, live_failure.error, sizeof(failure.error));
      copy.state.store(live.state.load(std::memory_order_acquire), std::memory_order_relaxed);
      copy.started_ns.store(live.started_ns.load(std::memory_order_relaxed), std::memory_order_relaxed);
      copy.finished_ns.store(live.finished_ns.load(std::memory_order_relaxed), std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_acquire);
      consistent = live.version.load(std::memory_order_relaxed) == before;
    }
    if (!consistent) continue;
    copy.copied_path[kPathChars - 1] = '\0';
    failure.error[kErrorChars - 1] = '\0';
    if (copy.state.load() != State::kFailed) failure = Failure();
    const char* kind = copy.kind == kCollectiveEntry ? "coll" : copy.kind == kSendEntry ? "send" : "recv";
    const char* name = copy.kind == kCollectiveEntry ? ApiCallName(static_cast<uint8_t>(copy.coll))
                       : copy.kind == kSendEntry     ? "Send"
                                                     : "Recv";
    text += StrCat("{\"seq\":", copy.seq, ",\"kind\":\"", kind, "\",\"call\":\"", name, "\",\"count\":", copy.count,
                   ",\"dtype\":\"", ApiTypeName(copy.dtype), "\"");
    if (copy.kind == kCollectiveEntry) {
      text += StrCat(",\"op\":\"", kOpNames[copy.redop < kNoOpCode ? copy.redop : kNoOpCode], "\",\"root\":", copy.root);
    } else {
      text += StrCat(",\"peer\":", copy.peer);
    }
    text += ",\"path\":\"";
    AppendJsonString(&text, copy.path);
    text += StrCat("\",\"state\":\"", StateName(copy.state.load()), "\",\"enqueued_ns\":", copy.enqueued_ns,
                   ",\"started_ns\":", copy.started_ns.load(), ",\"finished_ns\":", copy.finished_ns.load());
    if (failure.waiting.nrecv + failure.waiting.nsend > 0) {
      text += ",\"waiting_for_data_from\":[";
      for (int i = 0; i < failure.waiting.nrecv; ++i) text += StrCat(i ? "," : "", failure.waiting.recv_from[i]);
      text += "],\"waiting_for_peer_to_take\":[";
      for (int i = 0; i < failure.waiting.nsend; ++i) text += StrCat(i ? "," : "", failure.waiting.send_to[i]);
      text += "]";
      if (failure.waiting.truncated) text += ",\"waiting_truncated\":true";
    }
    if (failure.error[0] != '\0') {
      text += ",\"error\":\"";
      AppendJsonString(&text, failure.error);
      text += "\"";
    }
    text += "}\n";
  }
  return WriteWholeFile(path, text);
}

void FlightRecorder::DumpToPatternFile(const char* reason, uint64_t waiting_turn) const {
  if (file_pattern_.empty()) return;
  const std::string path = ExpandPattern(file_pattern_);
  Status status = Dump(path, reason, waiting_turn);
  if (status.ok()) {
    CHORUS_WARN("COLL", "rank ", identity_.rank, ": flight recorder dumped to ", path, " (", reason, ")");
  } else {
    CHORUS_WARN("COLL", "rank ", identity_.rank, ": flight recorder dump failed: ", status.message());
  }
}

Status WriteWholeFile(const std::string& path, const std::string& text) {
  // Written beside it, then renamed over it: a reader (or a dump racing
  // this one) sees the old file or the new one, never half of one.
  // Named per process and thread: only dumps on other threads can race it.
  const std::string temporary =
      StrCat(path, ".", getpid(), ".", std::hash<std::thread::id>{}(std::this_thread::get_id()), ".tmp");
  FILE* file = std::fopen(temporary.c_str(), "w");
  if (file == nullptr) return InvalidArgument("cannot open trace file '", path, "': ", std::strerror(errno));
  const size_t written = std::fwrite(text.data(), 1, text.size(), file);
  const bool closed = std::fclose(file) == 0;
  if (written != text.size() || !closed || std::rename(temporary.c_str(), path.c_str()) != 0) {
    const int error = errno;
    std::remove(temporary.c_str());
    return SystemError("writing trace file '", path, "' failed: ", std::strerror(error));
  }
  return Status::Ok();
}

}  // namespace chorus
