// The descriptors a transport's waits are made of: an eventfd that Wakeup
// signals and a waiting thread drains, and a wait set, an epoll set that
// makes several descriptors one to poll (Transport::ArmWait's fd).
#pragma once

#include <initializer_list>

#include "base/status.h"
#include "transports/socket/socket.h"

namespace chorus {

// A non-blocking, close-on-exec eventfd (owned like a socket).
Status CreateWakeupFd(Socket* wakeup);
// Adds one to the counter; a full counter (EAGAIN) already means "wake up".
void SignalWakeupFd(int fd);
// Reads the counter back to zero.
void DrainWakeupFd(int fd);
// An epoll set watching `fds` for input, level-triggered: readable while
// any of them is. `what` names it in errors.
Status CreateWaitSet(std::initializer_list<int> fds, const char* what, Socket* set);

}  // namespace chorus
