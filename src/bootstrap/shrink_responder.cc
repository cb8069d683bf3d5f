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

// Serves until woken: it is the listener's only user meanwhile, and each
// request it answers is bounded by kAnswerMs.
void Responder::Serve() {
  pollfd entries[2] = {{endpoint_.listener.fd(), POLLIN, 0}, {wake_fd_, POLLIN, 0}};
  while (true) {
    const int ready = ::poll(entries, 2, -1);
    if (ready < 0) {
      if (errno == EINTR) continue;
      CHORUS_WARN("SHRINK", "rank ", endpoint_.rank, ": the shrink responder stops: ",
                  ErrnoError(errno, "poll").message());
      return;
    }
    if (entries[1].revents != 0) return;
    if ((entries[0].revents & (POLLERR | POLLNVAL)) != 0) {
      CHORUS_WARN("SHRINK", "rank ", endpoint_.rank, ": the shrink responder stops: the listener failed");
      return;
    }
    Socket socket;
    Status accepted = endpoint_.listener.Accept(Deadline::AfterMs(0), &socket);
    if (accepted.ok()) {
      Answer(std::move(socket));
    } else if (accepted.code() != chorusTimeout) {
      // E.g. out of descriptors: the listener stays readable, so pause
      // instead of spinning.
      CHORUS_WARN("SHRINK", "rank ", endpoint_.rank, ": the shrink responder: accept failed: ", accepted.message());
      pollfd wake = {wake_fd_, POLLIN, 0};
      if (::poll(&wake, 1, kAcceptRetryMs) > 0) return;
    }
  }
}

void Responder::Answer(Socket socket) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return;
    answering_fd_ = socket.fd();
  }
  const Deadline quick = Deadline::AfterMs(kAnswerMs);
  int asker = -1;
  Status status = ReadRequest(endpoint_, socket, quick, &asker);
  if (status.ok()) {
    const bool member = std::binary_search(agreed_.begin(), agreed_.end(), asker);
    status = SendReply(socket, member ? kReplyNotShrinking : kReplyLeftOut, EncodeRanks(agreed_), quick);
    CHORUS_INFO("SHRINK", "rank ", endpoint_.rank, " told rank ", asker,
                member ? " to ask again later (not shrinking now; agreed on " : " it was left out of the shrink to ",
                FormatRanks(agreed_), member ? ")" : "");
  }
  // Abandoned probes and joins (and strangers) end here.
  if (!status.ok()) {
    CHORUS_TRACE("SHRINK", "rank ", endpoint_.rank, ": the responder dropped a connection: ", status.message());
  }
  std::lock_guard<std::mutex> lock(mutex_);
  answering_fd_ = -1;
}

}  // namespace chorus::shrink
