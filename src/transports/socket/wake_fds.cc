#include "transports/socket/wake_fds.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace chorus {

Status CreateWakeupFd(Socket* wakeup) {
  *wakeup = Socket(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!wakeup->valid()) return ErrnoError(errno, "eventfd");
  return Status::Ok();
}

void SignalWakeupFd(int fd) {
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t ignored = ::write(fd, &one, sizeof(one));
}

void DrainWakeupFd(int fd) {
  uint64_t ignored;
  while (::read(fd, &ignored, sizeof(ignored)) > 0) {
  }
}

Status CreateWaitSet(std::initializer_list<int> fds, const char* what, Socket* set) {
  *set = Socket(::epoll_create1(EPOLL_CLOEXEC));
  if (!set->valid()) return ErrnoError(errno, "epoll_create1");
  for (int fd : fds) {
    epoll_event event = {};
    event.events = EPOLLIN;
    if (::epoll_ctl(set->fd(), EPOLL_CTL_ADD, fd, &event) != 0) return ErrnoError(errno, StrCat("epoll_ctl(", what, ")"));
  }
  return Status::Ok();
}

}  // namespace chorus
