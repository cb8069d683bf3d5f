// Test harness for the public C API: N ranks as threads of this process, or
// as forked processes, each with a deadline so that a hang fails the test
// instead of blocking the suite.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "chorus/chorus.h"
#include "tests/common/single_threaded_fork.h"

namespace chorus_test {

using Millis = std::chrono::milliseconds;
inline constexpr Millis kDefaultDeadline{60000};

// Runs body(rank) on `nranks` threads at once and joins them. A thread still
// running at the deadline is a hang: the ranks that did not finish are
// printed and the process aborts (a stuck thread cannot be cancelled safely).
void RunOnThreads(int nranks, const std::function<void(int rank)>& body, Millis deadline = kDefaultDeadline);

// The communicators of one group, ranks as threads of this process. They are
// destroyed concurrently (one thread per rank) when the object goes away.
class ThreadComms {
 public:
  // One thread calls chorusGetUniqueId, then every rank's thread calls
  // chorusCommInitRankConfig (config may be null).
  static ThreadComms InitRank(int nranks, const chorusConfig_t* config = nullptr);
  // chorusCommInitAll.
  static ThreadComms InitAll(int nranks);

  ThreadComms() = default;
  ThreadComms(ThreadComms&& other) noexcept;
  ThreadComms& operator=(ThreadComms&& other) noexcept;
  ThreadComms(const ThreadComms&) = delete;
  ThreadComms& operator=(const ThreadComms&) = delete;
  ~ThreadComms();

  // True when every rank's init returned chorusSuccess.
  bool ok() const { return error_.empty(); }
  // Why init failed (code and chorusGetLastError per failing rank).
  const std::string& error() const { return error_; }
  int size() const { return static_cast<int>(comms_.size()); }
  chorusComm_t operator[](int rank) const { return comms_[rank]; }

  // Runs body(rank, comm) on one thread per rank.
  void Run(const std::function<void(int rank, chorusComm_t comm)>& body, Millis deadline = kDefaultDeadline) const;

  // Aborts every communicator (instead of destroying them at the end).
  void AbortAll();
  // Forgets rank's handle (the caller aborted or destroyed it) and returns it.
  chorusComm_t Release(int rank);

 private:
  void DestroyAll();

  std::vector<chorusComm_t> comms_;
  std::string error_;
};

// A config with a forced algorithm ("ring", "tree", or NCCL syntax) and
// timeout; the string must outlive the config.
chorusConfig_t MakeConfig(const char* algo = nullptr, int timeout_ms = -1);

// "chorusInvalidArgument (3): <last error of comm>" for failure messages.
std::string Describe(chorusResult_t result, chorusComm_t comm);

// How one forked rank ended.
struct ChildOutcome {
  int rank = -1;
  pid_t pid = -1;
  bool exited = false;  // exited normally; exit_code is valid
  int exit_code = -1;
  int signal = 0;  // the signal that ended it, if any
  bool killed_at_deadline = false;
  std::string not_forked;  // why the child was never forked, if it was not
};

// Forks one child per rank. A child runs body(rank) and _exit()s with its
// return value; it must not use gtest assertions (the parent's state is not
// shared). The parent waits until `deadline` and SIGKILLs children still
// running.
//
// This process must have no other thread when it forks (see
// WaitUntilSingleThreaded); ForkRanks waits a few seconds for threads that
// are ending and otherwise forks nothing and says why in every outcome. A
// test whose ranks need a unique id takes it from a RendezvousProcess, not
// from chorusGetUniqueId here, whose root thread would still run.
std::vector<ChildOutcome> ForkRanks(int nranks, const std::function<int(int rank)>& body, Millis deadline);


std::string Describe(const ChildOutcome& outcome);

// Names of the chorus-shm-* files in /dev/shm (without the '/').
std::set<std::string> SharedMemorySegments();
// True when some live process maps /dev/shm/<name> (its creator, until the
// peers have mapped and unlinked it); true when /proc cannot be read, so a
// test never blames a segment it cannot judge.
bool MappedByAnyone(const std::string& name);

}  // namespace chorus_test
