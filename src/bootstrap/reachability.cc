#include "bootstrap/reachability.h"

#include <poll.h>

#include <algorithm>

#include "base/deadline.h"
#include "bootstrap/shrink_protocol.h"
#include "transports/socket/socket.h"

namespace chorus {

namespace {

// Notes `rank` as gone or unreachable when its attempt ended so.
void Record(shrink::ProbeState state, int rank, Reachability* out) {
  if (state == shrink::ProbeState::kGone) out->gone.push_back(rank);
  if (state == shrink::ProbeState::kUnreachable) out->unreachable.push_back(rank);
}

// One batch: every attempt started at once, then waited for together.
Status ProbeBatch(const std::vector<std::string>& addresses, const int* ranks, size_t count, int window_ms,
                  Reachability* out) {
  struct Attempt {
    int rank;
    Socket socket;
  };
  std::vector<Attempt> pending;
  for (size_t i = 0; i < count; ++i) {
    const int rank = ranks[i];
    Socket attempt;
    shrink::ProbeState state;
    // An address this rank cannot even parse tells nothing about its owner.
    if (!shrink::StartProbe(addresses[rank], &attempt, &state).ok()) continue;
    ++out->probed;
    Record(state, rank, out);
    if (state == shrink::ProbeState::kPending) pending.push_back({rank, std::move(attempt)});
  }
  const Deadline window = Deadline::AfterMs(window_ms);
  std::vector<pollfd> fds;
  while (!pending.empty() && !window.Expired()) {
    fds.clear();
    for (const Attempt& attempt : pending) fds.push_back({attempt.socket.fd(), POLLOUT, 0});
    const int ready = ::poll(fds.data(), fds.size(), std::max(1, window.RemainingMs()));
    if (ready < 0 && errno != EINTR) return ErrnoError(errno, "poll (probing ranks)");
    size_t left = 0;
    for (size_t i = 0; i < pending.size(); ++i) {
      shrink::ProbeState state = shrink::ProbeState::kPending;
      if (fds[i].revents != 0) CHORUS_RETURN_IF_ERROR(shrink::FinishProbe(&pending[i].socket, &state));
      Record(state, pending[i].rank, out);
      if (state == shrink::ProbeState::kPending) {
        if (left != i) pending[left] = std::move(pending[i]);
        ++left;
      }
    }
    pending.resize(left);
  }
  for (const Attempt& attempt : pending) out->unreachable.push_back(attempt.rank);
  return Status::Ok();
}

// "rank 1", "rank 1 and rank 3", "rank 1, rank 2 and rank 3": every rank
// with its own word, as tools that read messages look for "rank N".
std::string ListRanks(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  std::string text;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) text += i + 1 == ranks.size() ? " and " : ", ";
    text += "rank " + std::to_string(ranks[i]);
  }
  return text;
}

}  // namespace

Status ProbeRanks(const std::vector<std::string>& addresses, const std::vector<int>& ranks, int window_ms,
                  Reachability* out) {
  *out = Reachability();
  for (size_t at = 0; at < ranks.size(); at += kMaxProbesAtOnce) {
    const size_t count = std::min(ranks.size() - at, static_cast<size_t>(kMaxProbesAtOnce));
    for (size_t i = at; i < at + count; ++i) {
      if (ranks[i] < 0 || static_cast<size_t>(ranks[i]) >= addresses.size()) {
        return InvalidArgument("probing rank ", ranks[i], ": no such rank among ", addresses.size());
      }
    }
    CHORUS_RETURN_IF_ERROR(ProbeBatch(addresses, ranks.data() + at, count, window_ms, out));
  }
  return Status::Ok();
}

std::string DescribeReachability(const Reachability& reachability, int window_ms) {
  std::string text;
  const size_t unreachable = reachability.unreachable.size();
  if (unreachable > 1 && unreachable == static_cast<size_t>(reachability.probed)) {
    text += StrCat("; no other rank answered a connection within ", window_ms, " ms (",
                   ListRanks(reachability.unreachable), "): this host may be cut off");
  } else if (unreachable > 0) {
    text += StrCat("; ", ListRanks(reachability.unreachable), unreachable == 1 ? " does" : " do",
                   " not answer a connection within ", window_ms, " ms: ", unreachable == 1 ? "its host is" : "their hosts are",
                   " down or cut off from this one");
  }
  if (!reachability.gone.empty()) {
    text += StrCat("; ", ListRanks(reachability.gone), reachability.gone.size() == 1 ? " refuses" : " refuse",
                   " connections: ", reachability.gone.size() == 1 ? "its process" : "their processes",
                   " exited or released the communicator");
  }
  return text;
}

}  // namespace chorus
