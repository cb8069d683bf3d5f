// Chaos: randomized faults against ranks as forked processes. Each trial
// draws a rank count, a transport, a collective, a victim, a fault (SIGKILL
// or SIGSTOP) and where it strikes (in init, in a collective, in a group of
// sends and receives, or in the shrink that follows a first death), and
// checks what a user relies on:
//  - no survivor ever returns a wrong result as success, crashes or hangs;
//  - every failure is chorusRemoteError or chorusTimeout, names a peer, and
//    comes within the deadline (plus slack for a loaded 2-core host);
//  - survivors that shrink and succeed agree on one membership and reduce
//    exactly over it;
//  - no shared memory segment outlives the trial (a stopped rank is killed
//    when the survivors are done; what it still held is counted apart).
// Some trials run with /dev/shm nearly full (a 256 KiB tmpfs in a private
// mount namespace, when the test runs as root): set-up must fall back to
// TCP and stay exact.
// CHORUS_CHAOS_TRIALS (default 24) and CHORUS_CHAOS_SEED (default 1) choose
// the runs; perf/chaos/chaos.sh runs many more and prints the same counts.
#include <gtest/gtest.h>

#include <signal.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/api/harness.h"

namespace chorus_test {
namespace {

constexpr int kTimeoutMs = 2000;
constexpr double kSlackSeconds = 8;  // 2 shared cores, several processes

enum class Fault { kKill, kStop };
enum class Point { kInit, kCollective, kGroup, kShrink };
enum class Collective { kAllReduce, kBroadcast, kAllGather, kReduceScatter };

const char* Name(Fault fault) { return fault == Fault::kKill ? "SIGKILL" : "SIGSTOP"; }
const char* Name(Point point) {
  switch (point) {
    case Point::kInit: return "init";
    case Point::kCollective: return "collective";
    case Point::kGroup: return "group";
    case Point::kShrink: return "shrink";
  }
  return "?";
}
const char* Name(Collective collective) {
  switch (collective) {
    case Collective::kAllReduce: return "allreduce";
    case Collective::kBroadcast: return "broadcast";
    case Collective::kAllGather: return "allgather";
    case Collective::kReduceScatter: return "reducescatter";
  }
  return "?";
}

struct Trial {
  int nranks = 2;
  std::string transport;
  Collective collective = Collective::kAllReduce;
  size_t count = 1;
  int root = 0;
  int victim = 0;       // the rank the fault strikes
  Fault fault = Fault::kKill;
  Point point = Point::kCollective;
  int delay_us = 0;     // after the start of the struck phase
  int first_death = -1;  // kShrink: the rank SIGKILLed in a collective first
  bool small_shm = false;  // /dev/shm of 256 KiB: too small for any segment

  std::string Describe() const {
    char text[256];
    std::snprintf(text, sizeof(text), "%d ranks over %s, %s of %zu, %s of rank %d %d us into %s%s", nranks,
                  transport.c_str(), Name(collective), count, Name(fault), victim, delay_us, Name(point),
                  first_death >= 0 ? (" after SIGKILL of rank " + std::to_string(first_death)).c_str() : "");
    return std::string(text) + (small_shm ? ", /dev/shm full" : "");
  }
};

Trial Draw(std::mt19937_64& random) {
  auto pick = [&](int n) { return static_cast<int>(random() % static_cast<uint64_t>(n)); };
  Trial trial;
  trial.point = static_cast<Point>(pick(4));
  trial.nranks = trial.point == Point::kShrink ? 3 + pick(2) : 2 + pick(3);
  static const char* const kTransports[] = {"shm", "tcp", "auto"};
  trial.transport = kTransports[pick(3)];
  trial.collective = static_cast<Collective>(pick(4));
  static const size_t kCounts[] = {1, 100, 4096, 65536, 1 << 20};
  trial.count = kCounts[pick(5)];
  trial.root = pick(trial.nranks);
  trial.victim = pick(trial.nranks);
  trial.fault = pick(2) == 0 ? Fault::kKill : Fault::kStop;
  trial.delay_us = trial.point == Point::kInit ? pick(30000) : pick(20000);
  if (trial.point == Point::kShrink) {
    do {
      trial.first_death = pick(trial.nranks);
    } while (trial.first_death == trial.victim);
    trial.delay_us = pick(10000);
  }
  if (pick(6) == 0) {
    trial.small_shm = true;
    trial.transport = "auto";  // shm alone could not start at all
  }
  return trial;
}

// A survivor's exit code.
enum Exit : int {
  kCompleted = 0,       // every round succeeded with exact results
  kFailedClearly = 1,   // a call failed with a clear error in time
  kWrong = 20,          // a call succeeded with a wrong result
  kBadCode = 21,        // a failure with another code than RemoteError/Timeout
  kNamesNoPeer = 22,    // a failure whose message names no rank or peer
  kTooSlow = 23,        // a call returned long after its deadline
  kShrinkBadComm = 24,  // the shrunk communicator reduced wrongly
  kJoined = 100,        // + 10 * new size + new rank: shrink succeeded
};

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void StrikeAfter(Fault fault, int delay_us) {
  std::thread([fault, delay_us] {
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
    raise(fault == Fault::kKill ? SIGKILL : SIGSTOP);
  }).detach();
}

bool Clear(chorusResult_t result) { return result == chorusRemoteError || result == chorusTimeout; }

bool NamesAPeer(const char* message) {
  const std::string text = message == nullptr ? "" : message;
  return text.find("peer") != std::string::npos || text.find("rank") != std::string::npos;
}

// Enough rounds that a fault drawn within 20 ms mostly strikes while they run.
int Rounds(size_t count) { return count <= 4096 ? 400 : count <= 65536 ? 100 : 20; }

// The value rank `rank` contributes at element i in round `round`.
int32_t Contribution(int rank, size_t i, int round) {
  return (rank + 1) * static_cast<int32_t>(i % 13 + 1) + round;
}

// Runs one round of the trial's collective (or group) and checks it.
chorusResult_t RunRound(const Trial& trial, chorusComm_t comm, int rank, int round, bool* wrong) {
  const int n = trial.nranks;
  const size_t count = trial.count;
  std::vector<int32_t> send, recv;
  chorusResult_t result = chorusSuccess;
  if (trial.point == Point::kGroup) {
    // Every rank sends to the next and receives from the previous, in a group.
    const int next = (rank + 1) % n, previous = (rank + n - 1) % n;
    send.assign(count, 0);
    for (size_t i = 0; i < count; ++i) send[i] = Contribution(rank, i, round);
    recv.assign(count, -1);
    if ((result = chorusGroupStart()) != chorusSuccess) return result;
    chorusResult_t sent = chorusSend(send.data(), count, chorusInt32, next, comm, nullptr);
    chorusResult_t received = chorusRecv(recv.data(), count, chorusInt32, previous, comm, nullptr);
    result = chorusGroupEnd();
    if (sent != chorusSuccess) return sent;
    if (received != chorusSuccess) return received;
    if (result != chorusSuccess) return result;
    for (size_t i = 0; i < count; ++i) *wrong |= recv[i] != Contribution(previous, i, round);
    return result;
  }
  switch (trial.collective) {
    case Collective::kAllReduce: {
      send.resize(count);
      for (size_t i = 0; i < count; ++i) send[i] = Contribution(rank, i, round);
      recv.assign(count, -1);
      result = chorusAllReduce(send.data(), recv.data(), count, chorusInt32, chorusSum, comm, nullptr);
      if (result != chorusSuccess) return result;
      for (size_t i = 0; i < count; ++i) {
        int32_t expected = 0;
        for (int r = 0; r < n; ++r) expected += Contribution(r, i, round);
        *wrong |= recv[i] != expected;
      }
      return result;
    }
    case Collective::kBroadcast: {
      recv.resize(count);
      for (size_t i = 0; i < count; ++i) recv[i] = rank == trial.root ? Contribution(rank, i, round) : -1;
      result = chorusBroadcast(recv.data(), recv.data(), count, chorusInt32, trial.root, comm, nullptr);
      if (result != chorusSuccess) return result;
      for (size_t i = 0; i < count; ++i) *wrong |= recv[i] != Contribution(trial.root, i, round);
      return result;
    }
    case Collective::kAllGather: {
      send.resize(count);
      for (size_t i = 0; i < count; ++i) send[i] = Contribution(rank, i, round);
      recv.assign(count * n, -1);
      result = chorusAllGather(send.data(), recv.data(), count, chorusInt32, comm, nullptr);
      if (result != chorusSuccess) return result;
      for (int r = 0; r < n; ++r) {
        for (size_t i = 0; i < count; ++i) *wrong |= recv[r * count + i] != Contribution(r, i, round);
      }
      return result;
    }
    case Collective::kReduceScatter: {
      send.resize(count * n);
      for (size_t i = 0; i < count * n; ++i) send[i] = Contribution(rank, i, round);
      recv.assign(count, -1);
      result = chorusReduceScatter(send.data(), recv.data(), count, chorusInt32, chorusSum, comm, nullptr);
      if (result != chorusSuccess) return result;
      for (size_t i = 0; i < count; ++i) {
        int32_t expected = 0;
        for (int r = 0; r < n; ++r) expected += Contribution(r, rank * count + i, round);
        *wrong |= recv[i] != expected;
      }
      return result;
    }
  }
  return chorusInternalError;
}

// The shrunk communicator must reduce exactly over the members it reports.
int CheckShrunk(chorusComm_t shrunk, int old_rank) {
  int new_rank = -1, size = -1;
  if (chorusCommUserRank(shrunk, &new_rank) != chorusSuccess || chorusCommCount(shrunk, &size) != chorusSuccess) {
    return kShrinkBadComm;
  }
  std::vector<int32_t> members(size, -1);
  int32_t mine = old_rank;
  if (chorusAllGather(&mine, members.data(), 1, chorusInt32, shrunk, nullptr) != chorusSuccess) {
    return kFailedClearly;  // another fault of the trial may still strike it
  }
  int32_t sum = old_rank + 1, expected = 0;
  for (int32_t member : members) expected += member + 1;
  if (chorusAllReduce(&sum, &sum, 1, chorusInt32, chorusSum, shrunk, nullptr) != chorusSuccess) return kFailedClearly;
  if (sum != expected || members[new_rank] != old_rank) return kShrinkBadComm;
  return kJoined + 10 * size + new_rank;
}

// `failing_call_seconds` (shared with the parent) receives how long the
// collective call that failed took: the detection time, at most.
int RankBody(const Trial& trial, const chorusUniqueId& id, int rank, double* failing_call_seconds) {
  setenv("CHORUS_TRANSPORT", trial.transport.c_str(), 1);
  const double limit = kTimeoutMs / 1000.0 + kSlackSeconds;
  const bool victim = rank == trial.victim;
  chorusConfig_t config = MakeConfig(nullptr, kTimeoutMs);
  if (victim && trial.point == Point::kInit) StrikeAfter(trial.fault, trial.delay_us);
  chorusComm_t comm = nullptr;
  auto start = std::chrono::steady_clock::now();
  chorusResult_t result = chorusCommInitRankConfig(&comm, trial.nranks, id, rank, &config);
  // Init may wait for the slowest rank to start: allow it the timeout twice.
  if (SecondsSince(start) > limit + kTimeoutMs / 1000.0) return kTooSlow;
  if (result != chorusSuccess) {
    if (!Clear(result)) return kBadCode;
    return NamesAPeer(chorusGetLastError(nullptr)) ? kFailedClearly : kNamesNoPeer;
  }
  if (victim && (trial.point == Point::kCollective || trial.point == Point::kGroup)) {
    StrikeAfter(trial.fault, trial.delay_us);
  }
  if (rank == trial.first_death) StrikeAfter(Fault::kKill, trial.delay_us % 5000);
  for (int round = 0; round < Rounds(trial.count) && result == chorusSuccess; ++round) {
    bool wrong = false;
    start = std::chrono::steady_clock::now();
    result = RunRound(trial, comm, rank, round, &wrong);
    if (result != chorusSuccess) *failing_call_seconds = SecondsSince(start);
    if (SecondsSince(start) > limit) return kTooSlow;
    if (result == chorusSuccess && wrong) return kWrong;
  }
  if (result == chorusSuccess) {
    if (chorusCommDestroy(comm) != chorusSuccess) return kFailedClearly;
    return kCompleted;
  }
  if (!Clear(result)) return kBadCode;
  if (!NamesAPeer(chorusGetLastError(comm))) return kNamesNoPeer;
  if (trial.point != Point::kShrink) {
    (void)chorusCommAbort(comm);
    return kFailedClearly;
  }
  if (victim) StrikeAfter(trial.fault, trial.delay_us);
  chorusComm_t shrunk = nullptr;
  start = std::chrono::steady_clock::now();
  result = chorusCommShrink(comm, &shrunk);
  // The root of the agreement may die after answering: try once more.
  if (result != chorusSuccess && Clear(result)) result = chorusCommShrink(comm, &shrunk);
  if (SecondsSince(start) > 4 * limit) return kTooSlow;
  (void)chorusCommAbort(comm);
  if (result != chorusSuccess) return Clear(result) ? kFailedClearly : kBadCode;
  const int checked = CheckShrunk(shrunk, rank);
  (void)chorusCommAbort(shrunk);
  return checked;
}

struct Outcome {
  std::vector<int> exits;  // per rank; -1: the victim (struck or not)
  bool hang = false;
  bool crash = false;      // a survivor ended by a signal
  bool victim_completed = false;
  std::vector<std::string> leaked;          // segments of a rank that was killed
  std::vector<std::string> left_by_stopped;  // segments of a stopped rank killed at the end
  bool small_shm = false;  // ran with /dev/shm full
  std::vector<double> failing_call_seconds;  // of survivors whose collective failed
};

// A private mount namespace whose /dev/shm is a 256 KiB tmpfs, for the
// lifetime of the object; ok() is false where that is not allowed (not
// root, no namespaces): the trial then runs with the real /dev/shm.
class SmallDevShm {
 public:
  SmallDevShm() {
    // Private first, so that nothing mounted here reaches the host.
    if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return;
    ok_ = mount("chorus-chaos", "/dev/shm", "tmpfs", 0, "size=256k,mode=1777") == 0;
  }
  ~SmallDevShm() {
    if (ok_) umount2("/dev/shm", MNT_DETACH);
  }
  bool ok() const { return ok_; }

 private:
  bool ok_ = false;
};

// Forks the ranks, waits for the survivors (a stopped victim counts as done
// once stopped), then kills the victim if it is still there.
Outcome RunTrial(const Trial& trial) {
  Outcome outcome;
  outcome.exits.assign(trial.nranks, -1);
  // The root in a process of its own: this one stays single-threaded to
  // fork (tests/common/single_threaded_fork.h).
  const RendezvousProcess rendezvous;
  if (!rendezvous.ok()) {
    std::fprintf(stderr, "rendezvous: %s\n", rendezvous.error().c_str());
    outcome.crash = true;
    return outcome;
  }
  const chorusUniqueId id = rendezvous.id();
  std::unique_ptr<SmallDevShm> small_shm;
  if (trial.small_shm) small_shm = std::make_unique<SmallDevShm>();
  outcome.small_shm = small_shm != nullptr && small_shm->ok();
  const std::set<std::string> before = SharedMemorySegments();
  std::fflush(nullptr);
  const size_t shared_bytes = sizeof(double) * static_cast<size_t>(trial.nranks);
  void* shared = mmap(nullptr, shared_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) {
    outcome.crash = true;
    return outcome;
  }
  auto* seconds = static_cast<double*>(shared);
  for (int rank = 0; rank < trial.nranks; ++rank) seconds[rank] = 0;
  std::vector<pid_t> pids(trial.nranks, -1);
  for (int rank = 0; rank < trial.nranks; ++rank) {
    pids[rank] = fork();
    if (pids[rank] == 0) _exit(RankBody(trial, id, rank, &seconds[rank]));
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::vector<bool> done(trial.nranks, false);
  bool victim_stopped = false;
  auto survivors_done = [&] {
    for (int rank = 0; rank < trial.nranks; ++rank) {
      if (!done[rank] && !(rank == trial.victim && victim_stopped)) return false;
    }
    return true;
  };
  while (!survivors_done() && std::chrono::steady_clock::now() < deadline) {
    bool progressed = false;
    for (int rank = 0; rank < trial.nranks; ++rank) {
      if (done[rank]) continue;
      int status = 0;
      const pid_t got = waitpid(pids[rank], &status, WNOHANG | WUNTRACED);
      if (got != pids[rank]) continue;
      progressed = true;
      if (WIFSTOPPED(status)) {
        if (rank == trial.victim) victim_stopped = true;
        continue;
      }
      done[rank] = true;
      const bool struck = rank == trial.victim || rank == trial.first_death;
      if (WIFEXITED(status)) {
        if (!struck) outcome.exits[rank] = WEXITSTATUS(status);
        if (rank == trial.victim && WEXITSTATUS(status) == kCompleted) outcome.victim_completed = true;
      } else if (!struck || WTERMSIG(status) != SIGKILL) {
        outcome.crash = true;
      }
    }
    if (!progressed) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (int rank = 0; rank < trial.nranks; ++rank) {
    if (done[rank]) continue;
    if (!(rank == trial.victim && victim_stopped)) outcome.hang = true;
    kill(pids[rank], SIGKILL);
    waitpid(pids[rank], nullptr, 0);
  }
  for (int rank = 0; rank < trial.nranks; ++rank) {
    if (rank != trial.victim && rank != trial.first_death && seconds[rank] > 0) {
      outcome.failing_call_seconds.push_back(seconds[rank]);
    }
  }
  munmap(shared, shared_bytes);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  for (const std::string& name : SharedMemorySegments()) {
    if (before.count(name) != 0 || MappedByAnyone(name)) continue;
    (victim_stopped ? outcome.left_by_stopped : outcome.leaked).push_back(name);
    // A stopped rank's leftovers would wait for the host-wide sweep: remove
    // them so that later trials (and other tests) start clean.
    if (victim_stopped) shm_unlink(("/" + name).c_str());
  }
  return outcome;
}

int EnvInt(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::atoi(value) : fallback;
}

TEST(ChaosTest, RandomFaultsNeverGiveWrongResultsHangsCrashesOrLeaks) {
  const int trials = EnvInt("CHORUS_CHAOS_TRIALS", 24);
  const uint64_t seed = static_cast<uint64_t>(EnvInt("CHORUS_CHAOS_SEED", 1));
  std::mt19937_64 random(seed);
  std::map<std::string, int> counts;
  double slowest[2] = {0, 0};  // failing collective call after a SIGKILL, a SIGSTOP
  const auto start = std::chrono::steady_clock::now();
  for (int t = 0; t < trials; ++t) {
    const Trial trial = Draw(random);
    const Outcome outcome = RunTrial(trial);
    ++counts[std::string(Name(trial.fault)) + " in " + Name(trial.point)];
    std::set<int> sizes, new_ranks;
    int joined = 0;
    for (int rank = 0; rank < trial.nranks; ++rank) {
      const int code = outcome.exits[rank];
      if (rank == trial.victim || rank == trial.first_death) continue;
      if (code == kCompleted) ++counts["survivor completed every round"];
      else if (code == kFailedClearly) ++counts["survivor failed clearly in time"];
      else if (code >= kJoined) {
        ++counts["survivor shrank and reduced exactly"];
        ++joined;
        sizes.insert((code - kJoined) / 10);
        new_ranks.insert((code - kJoined) % 10);
      } else {
        ++counts["BAD: survivor exit " + std::to_string(code)];
        ADD_FAILURE() << trial.Describe() << ": rank " << rank << " exited " << code
                      << " (20 wrong result, 21 bad code, 22 names no peer, 23 too slow, 24 bad shrunk comm)";
      }
    }
    if (joined > 0 && (sizes.size() != 1 || static_cast<int>(new_ranks.size()) != joined)) {
      ++counts["BAD: split membership"];
      ADD_FAILURE() << trial.Describe() << ": survivors that shrank disagree";
    }
    for (double seconds : outcome.failing_call_seconds) {
      double& worst = slowest[trial.fault == Fault::kKill ? 0 : 1];
      worst = std::max(worst, seconds);
      if (seconds > kTimeoutMs / 1000.0 + 1) ++counts["failing call longer than the deadline + 1 s"];
    }
    if (outcome.victim_completed) ++counts["victim finished before its fault"];
    if (outcome.small_shm) ++counts["trial with /dev/shm full"];
    if (trial.small_shm && !outcome.small_shm) ++counts["trial meant for a full /dev/shm ran normally (no namespace)"];
    if (outcome.hang) ++counts["BAD: hang"];
    if (outcome.crash) ++counts["BAD: crash"];
    if (!outcome.leaked.empty()) ++counts["BAD: leaked segment"];
    if (!outcome.left_by_stopped.empty()) ++counts["segment left by a stopped rank killed at the end"];
    EXPECT_FALSE(outcome.hang) << trial.Describe();
    EXPECT_FALSE(outcome.crash) << trial.Describe();
    EXPECT_TRUE(outcome.leaked.empty()) << trial.Describe() << ": " << outcome.leaked.front();
  }
  std::printf("chaos: %d trials (seed %llu) in %.1f s\n", trials, static_cast<unsigned long long>(seed),
              SecondsSince(start));
  for (const auto& [what, count] : counts) std::printf("  %5d  %s\n", count, what.c_str());
  std::printf("  slowest failing collective call: %.3f s after a SIGKILL, %.3f s after a SIGSTOP (deadline %.1f s)\n",
              slowest[0], slowest[1], kTimeoutMs / 1000.0);
}

}  // namespace
}  // namespace chorus_test
