// The responder: after a shrink was agreed on an endpoint, and whenever no
// other shrink of it runs, it answers the endpoint's listener so that a rank
// left out of that shrink is told so (instead of finding the listener closed
// and taking this rank for dead), and a member shrinking again is told to
// ask later.
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

#include "base/log.h"
#include "bootstrap/shrink_protocol.h"

namespace chorus::shrink {
namespace {

constexpr int kAcceptRetryMs = 100;

}  // namespace

Status Responder::Start(const RecoveryEndpoint& endpoint, std::vector<int> agreed, std::unique_ptr<Responder>* out) {
  const int wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd < 0) return ErrnoError(errno, "eventfd for the shrink responder");
  std::unique_ptr<Responder> responder(new Responder(endpoint, std::move(agreed), wake_fd));
  try {
    responder->thread_ = std::thread([raw = responder.get()] { raw->Serve(); });
  } catch (const std::system_error& error) {
    return SystemError("starting the shrink responder thread: ", error.what());
  }
  *out = std::move(responder);
  return Status::Ok();
}

Responder::Responder(const RecoveryEndpoint& endpoint, std::vector<int> agreed, int wake_fd)
    : endpoint_(endpoint), agreed_(std::move(agreed)), wake_fd_(wake_fd) {}

Responder::~Responder() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    // A slow asker must not hold up the release of a communicator.
    if (answering_fd_ >= 0) ::shutdown(answering_fd_, SHUT_RDWR);
  }
  const uint64_t one = 1;
  if (::write(wake_fd_, &one, sizeof(one)) < 0) {
    CHORUS_WARN("SHRINK", "waking the shrink responder: ", ErrnoError(errno, "write").message());
  }
  if (thread_.joinable()) thread_.join();
  ::close(wake_fd_);
}

// Serves until woken: it is the listener's only user meanwhile. Requests
// authenticate concurrently, so a silent stranger delays no asker; each
// answer is bounded by kAnswerMs.
void Responder::Serve() {
  HandshakeAcceptor acceptor(endpoint_.listener, endpoint_.secret,
                             RequestAcceptorOptions(endpoint_, "shrink responder"));
  std::vector<pollfd> entries;
  std::vector<AdmittedConnection> admitted;
  while (true) {
    entries.clear();
    entries.push_back({wake_fd_, POLLIN, 0});
    acceptor.AppendPollEntries(&entries);
    const int ready = ::poll(entries.data(), entries.size(), acceptor.PollTimeoutMs(Deadline::Never()));
    if (ready < 0) {
      if (errno == EINTR) continue;
      CHORUS_WARN("SHRINK", "rank ", endpoint_.rank, ": the shrink responder stops: ",
                  ErrnoError(errno, "poll").message());
      return;
    }
    if (entries[0].revents != 0) return;
    if ((entries[1].revents & (POLLERR | POLLNVAL)) != 0) {
      CHORUS_WARN("SHRINK", "rank ", endpoint_.rank, ": the shrink responder stops: the listener failed");
      return;
    }
    admitted.clear();
    Status handled = acceptor.Handle(entries, &admitted);
    for (AdmittedConnection& connection : admitted) Answer(std::move(connection));
    if (!handled.ok()) {
      // E.g. out of descriptors: the listener stays readable, so pause
      // instead of spinning.
      CHORUS_WARN("SHRINK", "rank ", endpoint_.rank, ": the shrink responder: ", handled.message());
      pollfd wake = {wake_fd_, POLLIN, 0};
      if (::poll(&wake, 1, kAcceptRetryMs) > 0) return;
    }
  }
}

void Responder::Answer(AdmittedConnection connection) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return;
    answering_fd_ = connection.socket.fd();
  }
  const Deadline quick = Deadline::AfterMs(kAnswerMs);
  int asker = -1;
  Status status = CheckRequest(endpoint_, connection, quick, &asker);
  if (status.ok()) {
    const bool member = std::binary_search(agreed_.begin(), agreed_.end(), asker);
    status = SendReply(connection.socket, member ? kReplyNotShrinking : kReplyLeftOut, EncodeRanks(agreed_), quick);
    CHORUS_INFO("SHRINK", "rank ", endpoint_.rank, " told rank ", asker,
                member ? " to ask again later (not shrinking now; agreed on " : " it was left out of the shrink to ",
                FormatRanks(agreed_), member ? ")" : "");
  }
  if (!status.ok()) {
    CHORUS_TRACE("SHRINK", "rank ", endpoint_.rank, ": the responder dropped a connection: ", status.message());
  }
  std::lock_guard<std::mutex> lock(mutex_);
  answering_fd_ = -1;
}

}  // namespace chorus::shrink
