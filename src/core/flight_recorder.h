// FlightRecorder: the last N operations of one communicator, kept in a ring
// allocated once, and written out as JSON lines when something goes wrong
// (a timeout, an abort, a fatal error), on SIGUSR1 (core/trace_signal.h) or
// on chorusCommDumpTrace. tools/chorus_trace.py merges the dumps of all
// ranks into a verdict (docs/debugging.md).
//
// Writing: only the launch that holds the communicator's turn records (one
// writer at a time, in issue order), so recording takes no lock and
// allocates nothing. Reading (a dump) may run on another thread at any
// time: each entry carries a version that is odd while its fixed fields
// are written, and the fields that change later are atomics.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "core/operation.h"
#include "core/waiting_peers.h"

namespace chorus {

// Identity of the recording communicator, written in every dump's header.
struct TraceIdentity {
  int rank = 0;
  int nranks = 1;
  uint64_t comm_hash = 0;  // the same on every rank of one communicator
};

// Cache-line aligned: the recorders of ranks that are threads of one
// process are written on every call by different cores, and must not share
// a line (sharing one cost ~250 ns per 2-rank board allreduce).
class alignas(64) FlightRecorder {
 public:
  enum class State : uint8_t { kQueued, kRunning, kDone, kFailed };

  // `capacity` entries (>0), allocated here once. `file_pattern`:
  // CHORUS_TRACE_FILE (may be empty: automatic dumps are then off).
  FlightRecorder(const TraceIdentity& identity, size_t capacity, std::string file_pattern);
  ~FlightRecorder();
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;

  size_t capacity() const { return capacity_; }
  const std::string& file_pattern() const { return file_pattern_; }

  // --- The launch holding the turn (one thread at a time) ---
  // Records the launch's operations as queued.
  void BeginLaunch(const Operation* ops, size_t nops);
  // Operation `index` of the launch runs by `path` (a schedule's algorithm):
  // copied, at most 23 characters.
  void SetPath(size_t index, const char* path);
  // The same for a name that lives as long as the program (a string
  // literal): only the pointer is kept.
  void SetStaticPath(size_t index, const char* path);
  // Data starts to move: every operation of the launch is running.
  // `read_clock` false: nothing ran since BeginLaunch, reuse its time.
  void MarkStarted(bool read_clock);
  // The launch ended: done, or failed with `status` and what it waited for.
  void EndLaunch(const Status& status, const WaitingPeers* waiting);

  // --- Any thread ---
  // Writes the header and the entries (oldest first) to `path`; `reason`
  // says why ("timeout", "abort", "signal", "api", ...). `waiting_turn`:
  // launches issued but still waiting for their turn.
  Status Dump(const std::string& path, const char* reason, uint64_t waiting_turn) const;
  // Dump to the expanded CHORUS_TRACE_FILE; a no-op without one. Failures
  // are logged, not returned (called on error paths).
  void DumpToPatternFile(const char* reason, uint64_t waiting_turn) const;
  // `pattern` with %h (host), %p (pid) and %r (rank) replaced.
  std::string ExpandPattern(const std::string& pattern) const;

  // Nanoseconds of CLOCK_MONOTONIC (std::chrono::steady_clock's clock) at
  // the kernel tick's resolution, the clock of every entry's times.
  static int64_t NowNs();

  struct Entry;    // flight_recorder.cc
  struct Failure;  // flight_recorder.cc

 private:
  // Entry `i` of the current launch.
  Entry& LaunchEntry(size_t i) const;
  void BeginWrite(Entry& entry);
  void EndWrite(Entry& entry);

  const TraceIdentity identity_;
  const size_t capacity_;
  const std::string file_pattern_;
  std::unique_ptr<Entry[]> entries_;
  std::unique_ptr<Failure[]> failures_;  // beside entries_, written only on failure
  // Entries ever recorded; only the turn holder writes it.
  std::atomic<uint64_t> recorded_{0};
  // The current launch: its entries start at launch_slot_; the first
  // launch_skipped_ of its operations did not fit the ring.
  size_t next_slot_ = 0, launch_slot_ = 0, launch_count_ = 0, launch_skipped_ = 0;
  int64_t launch_began_ns_ = 0;
  uint16_t last_version_ = 0;  // the even version the last write bracket closed with
  uint64_t collectives_ = 0, point_to_point_ = 0;  // sequence numbers given so far
};

// Creates `path` and writes `text` into it; an unwritable path is an
// InvalidArgument naming it and the OS error.
Status WriteWholeFile(const std::string& path, const std::string& text);

}  // namespace chorus
