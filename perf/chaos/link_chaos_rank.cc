// link_chaos_rank: one rank of perf/chaos/link_chaos.sh, run on every host
// of perf/cluster/cluster.sh while a link fault strikes. Through the public
// API only (chorusCommInitFromEnv, as the cluster sets it up), it runs rounds
// of checked collectives (int32 allreduce sum, broadcast, allgather; 1 KiB
// to 4 MiB) for a wall-clock duration that rank 0 decides and shares in
// every allreduce, so that every rank stops after the same round.
//
//   link_chaos_rank [--seconds S] [--slack-ms M] [--shrink]
//
// The deadline is CHORUS_TIMEOUT_MS (default here 3000). Every failing call
// prints one line:
//   linkchaos: fail rank=R phase=P round=K op=O bytes=B code=C ms=T peers=L msg=...
// (phase init, collective, shrink or shrunk; peers: the other ranks the
// message of chorusGetLastError names, "-" if none). The last line is
//   linkchaos: end rank=R exit=E
// (after "linkchaos: rounds rank=R rounds=K slowest_ok_ms=T" once the
// rounds are over).
// With --shrink, the first failure is followed by chorusCommShrink (tried
// twice) and checked rounds on the new communicator, whose members print
// "linkchaos: shrunk ... members=L" and then stay 4 timeouts. Exit codes:
// enum Exit below.
#include <getopt.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "chorus/chorus.h"

namespace {

enum Exit : int {
  kCompleted = 0,      // every round exact
  kFailedClearly = 1,  // a call failed with a clear error within its limit (no shrink, or shrink failed so)
  kShrunk = 2,         // failed, shrank, and the new communicator reduced exactly
  kInitFailed = 3,     // init failed with a clear error within its limit
  kWrong = 20,         // a call returned success with a wrong result
  kBadCode = 21,       // a failure with another code than RemoteError, Timeout or Revoked
  kNamesNoPeer = 22,   // a collective failure whose message names no other rank
  kTooSlow = 23,       // a call returned later than its limit
  kShrunkWrong = 24,   // the new communicator's membership or reduction was wrong
  kUsage = 64,         // bad arguments
};

struct Options {
  double seconds = 8;
  int slack_ms = 2000;
  bool shrink = false;
};

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// The ranks other than `self` that an error message names ("peer 3",
// "rank 3"): who the failing rank blames.
std::string NamedPeers(const char* message, int self) {
  std::set<int> named;
  const std::string text = message == nullptr ? "" : message;
  for (const char* word : {"peer ", "rank "}) {
    for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
      const char* digits = text.c_str() + at + std::strlen(word);
      if (*digits < '0' || *digits > '9') continue;
      const int rank = std::atoi(digits);
      if (rank != self) named.insert(rank);
    }
  }
  std::string list;
  for (int rank : named) {
    if (!list.empty()) list += ',';
    list += std::to_string(rank);
  }
  return list.empty() ? "-" : list;
}

// The result's enumerator, one word for the line's parser.
const char* ResultName(chorusResult_t result) {
  static const char* const kNames[] = {"chorusSuccess",         "chorusSystemError",  "chorusInternalError",
                                       "chorusInvalidArgument", "chorusInvalidUsage", "chorusRemoteError",
                                       "chorusInProgress",      "chorusTimeout",      "chorusRevoked"};
  return result >= 0 && result < chorusNumResults ? kNames[result] : "unknown";
}

bool Clear(chorusResult_t result) {
  return result == chorusRemoteError || result == chorusTimeout || result == chorusRevoked;
}

// Prints the failure line; returns whether the message names another rank.
bool ReportFailure(int rank, const char* phase, int round, const char* op, size_t bytes, chorusResult_t result,
                   double ms, chorusComm_t comm) {
  const char* message = chorusGetLastError(comm);
  const std::string peers = NamedPeers(message, rank);
  std::printf("linkchaos: fail rank=%d phase=%s round=%d op=%s bytes=%zu code=%s ms=%.0f peers=%s msg=%s\n", rank,
              phase, round, op, bytes, ResultName(result), ms, peers.c_str(), message);
  return peers != "-";
}

// What rank `rank` contributes at element i in round `round`.
int32_t Contribution(int rank, size_t i, int round) { return (rank + 1) * static_cast<int32_t>(i % 13 + 1) + round; }

int32_t SumOfContributions(int nranks, size_t i, int round) {
  return static_cast<int32_t>(i % 13 + 1) * nranks * (nranks + 1) / 2 + nranks * round;
}

constexpr size_t kSizes[] = {1024, 64 * 1024, 1024 * 1024, 4 * 1024 * 1024};

struct Call {
  const char* op = "";
  size_t bytes = 0;
  chorusResult_t result = chorusSuccess;
  bool wrong = false;
  double ms = 0;
};

// One round: allreduce, broadcast and allgather of one size, each checked
// exactly. The allreduce's last element carries rank 0's stop flag (the
// others add 0), so every rank learns in the same round when to stop.
class Rounds {
 public:
  Rounds(chorusComm_t comm, int rank, int nranks) : comm_(comm), rank_(rank), nranks_(nranks) {}

  // Runs the calls of `round` until one fails or is wrong, and returns the
  // last one run. Sets *stop when rank 0 said so.
  Call Run(int round, bool stop_flag, bool* stop, double* slowest_ok_ms) {
    const size_t bytes = kSizes[round % (sizeof(kSizes) / sizeof(kSizes[0]))];
    const size_t count = bytes / sizeof(int32_t);
    Call call = AllReduce(round, count, stop_flag, stop);
    if (!Ok(call, slowest_ok_ms)) return call;
    call = Broadcast(round, count);
    if (!Ok(call, slowest_ok_ms)) return call;
    return AllGather(round, std::max<size_t>(count / nranks_, 1));
  }

 private:
  static bool Ok(const Call& call, double* slowest_ok_ms) {
    if (call.result == chorusSuccess) *slowest_ok_ms = std::max(*slowest_ok_ms, call.ms);
    return call.result == chorusSuccess && !call.wrong;
  }

  Call AllReduce(int round, size_t count, bool stop_flag, bool* stop) {
    Call call{"allreduce", count * sizeof(int32_t)};
    send_.resize(count);
    for (size_t i = 0; i < count; ++i) send_[i] = Contribution(rank_, i, round);
    send_[count - 1] = rank_ == 0 && stop_flag ? 1 : 0;
    recv_.assign(count, -1);
    const auto start = Clock::now();
    call.result = chorusAllReduce(send_.data(), recv_.data(), count, chorusInt32, chorusSum, comm_, nullptr);
    call.ms = MsSince(start);
    if (call.result != chorusSuccess) return call;
    for (size_t i = 0; i + 1 < count; ++i) call.wrong |= recv_[i] != SumOfContributions(nranks_, i, round);
    const int32_t flag = recv_[count - 1];
    call.wrong |= rank_ == 0 ? flag != (stop_flag ? 1 : 0) : (flag != 0 && flag != 1);
    *stop = flag == 1;
    return call;
  }

  Call Broadcast(int round, size_t count) {
    Call call{"broadcast", count * sizeof(int32_t)};
    const int root = round % nranks_;
    recv_.resize(count);
    for (size_t i = 0; i < count; ++i) recv_[i] = rank_ == root ? Contribution(rank_, i, round) : -1;
    const auto start = Clock::now();
    call.result = chorusBroadcast(recv_.data(), recv_.data(), count, chorusInt32, root, comm_, nullptr);
    call.ms = MsSince(start);
    if (call.result != chorusSuccess) return call;
    for (size_t i = 0; i < count; ++i) call.wrong |= recv_[i] != Contribution(root, i, round);
    return call;
  }

  Call AllGather(int round, size_t count) {
    Call call{"allgather", count * sizeof(int32_t)};
    send_.resize(count);
    for (size_t i = 0; i < count; ++i) send_[i] = Contribution(rank_, i, round);
    recv_.assign(count * nranks_, -1);
    const auto start = Clock::now();
    call.result = chorusAllGather(send_.data(), recv_.data(), count, chorusInt32, comm_, nullptr);
    call.ms = MsSince(start);
    if (call.result != chorusSuccess) return call;
    for (int r = 0; r < nranks_; ++r) {
      for (size_t i = 0; i < count; ++i) call.wrong |= recv_[r * count + i] != Contribution(r, i, round);
    }
    return call;
  }

  chorusComm_t comm_;
  int rank_;
  int nranks_;
  std::vector<int32_t> send_, recv_;
};

// The new communicator must hold this rank where it says, and reduce exactly
// over the members it reports, for a few rounds.
int CheckShrunk(chorusComm_t shrunk, int old_rank, double limit_ms) {
  int new_rank = -1, size = -1;
  if (chorusCommUserRank(shrunk, &new_rank) != chorusSuccess || chorusCommCount(shrunk, &size) != chorusSuccess) {
    return kShrunkWrong;
  }
  std::vector<int32_t> members(size, -1);
  const int32_t mine = old_rank;
  auto start = Clock::now();
  chorusResult_t result = chorusAllGather(&mine, members.data(), 1, chorusInt32, shrunk, nullptr);
  double ms = MsSince(start);
  if (result != chorusSuccess) {
    ReportFailure(old_rank, "shrunk", 0, "allgather", sizeof(int32_t), result, ms, shrunk);
    return ms > limit_ms ? kTooSlow : Clear(result) ? kFailedClearly : kBadCode;
  }
  if (members[new_rank] != old_rank || !std::is_sorted(members.begin(), members.end())) return kShrunkWrong;
  std::string list;
  for (int32_t member : members) {
    if (!list.empty()) list += ',';
    list += std::to_string(member);
  }
  std::printf("linkchaos: shrunk rank=%d new_rank=%d size=%d members=%s\n", old_rank, new_rank, size, list.c_str());
  Rounds rounds(shrunk, new_rank, size);
  double slowest_ok_ms = 0;
  for (int round = 0; round < 8; ++round) {
    bool stop = false;
    const Call call = rounds.Run(round, /*stop_flag=*/false, &stop, &slowest_ok_ms);
    if (call.ms > limit_ms) return kTooSlow;
    if (call.result == chorusSuccess && call.wrong) return kShrunkWrong;
    if (call.result != chorusSuccess) {
      ReportFailure(old_rank, "shrunk", round, call.op, call.bytes, call.result, call.ms, shrunk);
      return Clear(call.result) ? kFailedClearly : kBadCode;
    }
  }
  return kShrunk;
}

int Main(const Options& options) {
  const char* timeout_text = std::getenv("CHORUS_TIMEOUT_MS");
  const int timeout_ms = timeout_text != nullptr ? std::atoi(timeout_text) : 3000;
  if (timeout_text == nullptr) setenv("CHORUS_TIMEOUT_MS", "3000", 1);
  const char* rank_text = std::getenv("RANK");
  const int env_rank = rank_text != nullptr ? std::atoi(rank_text) : -1;
  const double call_limit_ms = timeout_ms + options.slack_ms;
  // Init and shrink may each wait a timeout twice (for the slowest rank, for
  // the agreement then the new communicator's creation).
  const double twice_limit_ms = 2.0 * timeout_ms + options.slack_ms;

  chorusComm_t comm = nullptr;
  auto start = Clock::now();
  chorusResult_t result = chorusCommInitFromEnv(&comm, nullptr);
  double ms = MsSince(start);
  if (result != chorusSuccess) {
    ReportFailure(env_rank, "init", 0, "init", 0, result, ms, nullptr);
    return ms > twice_limit_ms ? kTooSlow : Clear(result) ? kInitFailed : kBadCode;
  }
  int rank = -1, nranks = -1;
  chorusCommUserRank(comm, &rank);
  chorusCommCount(comm, &nranks);

  Rounds rounds(comm, rank, nranks);
  const auto began = Clock::now();
  double slowest_ok_ms = 0;
  int rounds_done = 0;
  Call last;  // the last call run
  for (int round = 0;; ++round) {
    bool stop = false;
    const bool stop_flag = MsSince(began) >= options.seconds * 1000;
    last = rounds.Run(round, stop_flag, &stop, &slowest_ok_ms);
    if (last.ms > call_limit_ms) {
      if (last.result != chorusSuccess) {
        ReportFailure(rank, "collective", round, last.op, last.bytes, last.result, last.ms, comm);
      }
      std::printf("linkchaos: slow rank=%d round=%d op=%s ms=%.0f limit_ms=%.0f\n", rank, round, last.op, last.ms,
                  call_limit_ms);
      return kTooSlow;
    }
    if (last.result == chorusSuccess && last.wrong) {
      std::printf("linkchaos: wrong rank=%d round=%d op=%s bytes=%zu\n", rank, round, last.op, last.bytes);
      return kWrong;
    }
    if (last.result != chorusSuccess) break;
    rounds_done = round + 1;
    if (stop) break;
  }
  std::printf("linkchaos: rounds rank=%d rounds=%d slowest_ok_ms=%.0f\n", rank, rounds_done, slowest_ok_ms);
  if (last.result == chorusSuccess) {
    chorusCommDestroy(comm);
    return kCompleted;
  }
  const bool names_peer =
      ReportFailure(rank, "collective", rounds_done, last.op, last.bytes, last.result, last.ms, comm);
  if (!Clear(last.result)) return kBadCode;
  int exit = names_peer ? kFailedClearly : kNamesNoPeer;
  if (options.shrink) {
    chorusComm_t shrunk = nullptr;
    // A shrink that could not agree may be retried on `comm` (chorus.h):
    // once, as a program that shrinks would, rather than leaving at once.
    for (int attempt = 0; attempt < 2; ++attempt) {
      start = Clock::now();
      result = chorusCommShrink(comm, &shrunk);
      ms = MsSince(start);
      if (ms > twice_limit_ms) {
        exit = kTooSlow;
        break;
      }
      if (result == chorusSuccess) break;
      ReportFailure(rank, "shrink", attempt, "shrink", 0, result, ms, comm);
      if (!Clear(result)) {
        exit = kBadCode;
        break;
      }
    }
    if (result == chorusSuccess) {
      if (exit != kTooSlow) {
        std::printf("linkchaos: shrink rank=%d ms=%.0f\n", rank, ms);
        const int checked = CheckShrunk(shrunk, rank, call_limit_ms);
        if (exit == kFailedClearly || checked >= kWrong) exit = checked;
        // Members stay while the others may still be shrinking (two tries
        // of two timeouts each): a group that forms meanwhile without them
        // is a second communicator, not a successor of one that has left.
        if (checked == kShrunk) std::this_thread::sleep_for(std::chrono::milliseconds(4 * timeout_ms));
      }
      chorusCommAbort(shrunk);
    }
  }
  chorusCommAbort(comm);
  return exit;
}

bool ParseOptions(int argc, char** argv, Options* options) {
  static const option kLong[] = {{"seconds", required_argument, nullptr, 's'},
                                 {"slack-ms", required_argument, nullptr, 'k'},
                                 {"shrink", no_argument, nullptr, 'r'},
                                 {nullptr, 0, nullptr, 0}};
  for (int opt; (opt = getopt_long(argc, argv, "", kLong, nullptr)) != -1;) {
    switch (opt) {
      case 's':
        options->seconds = std::atof(optarg);
        break;
      case 'k':
        options->slack_ms = std::atoi(optarg);
        break;
      case 'r':
        options->shrink = true;
        break;
      default:
        return false;
    }
  }
  return optind == argc && options->seconds > 0 && options->slack_ms >= 0;
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);  // lines reach the cluster's log as they happen
  Options options;
  if (!ParseOptions(argc, argv, &options)) {
    std::fprintf(stderr, "usage: link_chaos_rank [--seconds S] [--slack-ms M] [--shrink]\n");
    return kUsage;
  }
  const int exit = Main(options);
  const char* rank_text = std::getenv("RANK");
  std::printf("linkchaos: end rank=%s exit=%d\n", rank_text != nullptr ? rank_text : "?", exit);
  return exit;
}
