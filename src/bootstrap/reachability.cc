#include "bootstrap/reachability.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

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

struct Attempt {
  int rank;
  Socket socket;
};

// Whether a connection in a listener's queue was reset: the listener
// closed (its process exited) after the connection completed. A live
// listener's queue keeps it silent; bytes would be an answer too.
bool WasReset(const Socket& socket) {
  char byte;
  const ssize_t got = ::recv(socket.fd(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

// Moves the attempts for which `keep` is false out of `attempts`, in order.
template <typename Keep>
void KeepOnly(std::vector<Attempt>* attempts, Keep keep) {
  size_t left = 0;
  for (size_t i = 0; i < attempts->size(); ++i) {
    if (!keep(i)) continue;
    if (left != i) (*attempts)[left] = std::move((*attempts)[i]);
    ++left;
  }
  attempts->resize(left);
}

// One batch: every attempt started at once, then waited for together. A
// connection that completes is watched for kResetGraceMs more (within the
// window): an exiting process gives up its memory, which is what its
// same-host peers see die, a moment before its descriptors close, and its
// listener completes connections until then, then resets them.
Status ProbeBatch(const std::vector<std::string>& addresses, const int* ranks, size_t count, int window_ms,
                  Reachability* out) {
  std::vector<Attempt> pending, connected;
  Deadline grace = Deadline::AfterMs(kResetGraceMs);
  for (size_t i = 0; i < count; ++i) {
    const int rank = ranks[i];
    Socket attempt;
    shrink::ProbeState state;
    // An address this rank cannot even parse tells nothing about its owner.
    if (!shrink::StartProbe(addresses[rank], &attempt, &state).ok()) continue;
    ++out->probed;
    Record(state, rank, out);
    if (state == shrink::ProbeState::kPending) pending.push_back({rank, std::move(attempt)});
    if (state == shrink::ProbeState::kConnected) connected.push_back({rank, std::move(attempt)});
  }
  const Deadline window = Deadline::AfterMs(window_ms);
  std::vector<pollfd> fds;
  while ((!pending.empty() || (!connected.empty() && !grace.Expired())) && !window.Expired()) {
    fds.clear();
    for (const Attempt& attempt : pending) fds.push_back({attempt.socket.fd(), POLLOUT, 0});
    for (const Attempt& attempt : connected) fds.push_back({attempt.socket.fd(), POLLIN | POLLRDHUP, 0});
    const int wait_ms = pending.empty() ? std::min(grace.RemainingMs(), window.RemainingMs()) : window.RemainingMs();
    const int ready = ::poll(fds.data(), fds.size(), std::max(1, wait_ms));
    if (ready < 0 && errno != EINTR) return ErrnoError(errno, "poll (probing ranks)");
    const size_t watched = pending.size();
    KeepOnly(&connected, [&](size_t i) {
      if (fds[watched + i].revents == 0) return true;
      if (WasReset(connected[i].socket)) out->gone.push_back(connected[i].rank);
      return false;  // reset (gone) or answered (lives)
    });
    Status finished;
    KeepOnly(&pending, [&](size_t i) {
      shrink::ProbeState state = shrink::ProbeState::kPending;
      if (fds[i].revents != 0 && finished.ok()) finished = shrink::FinishProbe(&pending[i].socket, &state);
      Record(state, pending[i].rank, out);
      if (state == shrink::ProbeState::kConnected) {
        connected.push_back({pending[i].rank, std::move(pending[i].socket)});
        grace = Deadline::AfterMs(kResetGraceMs);
      }
      return state == shrink::ProbeState::kPending;
    });
    CHORUS_RETURN_IF_ERROR(finished);
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
