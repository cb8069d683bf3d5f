// Forking test processes safely: a child gets a copy of every lock as it was
// at fork, so a lock held by another thread of the parent stays held in the
// child forever. glibc's malloc takes its own locks around fork; GCC 12's
// AddressSanitizer allocator does not, and a child forked while another
// thread allocates then hangs at its first allocation. Tests that fork
// therefore fork only while single-threaded.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>

#include "chorus/chorus.h"

namespace chorus_test {

// Waits up to `patience` until this process runs only the calling thread;
// returns the number of threads at the end (1 on success, -1 when
// /proc/self/task cannot be read).
int WaitUntilSingleThreaded(std::chrono::milliseconds patience);

// A rendezvous root served by a process of its own, forked while this process
// is single-threaded, for tests that fork ranks: chorusGetUniqueId in this
// process would start the root's thread here, and the ranks forked after it
// could inherit an allocator lock that thread holds.
// The child calls chorusGetUniqueId with this process's environment, sends
// the id back, and serves the rendezvous until this object goes away (then it
// is told to exit, and killed if it has not within a few seconds).
class RendezvousProcess {
 public:
  RendezvousProcess();
  RendezvousProcess(const RendezvousProcess&) = delete;
  RendezvousProcess& operator=(const RendezvousProcess&) = delete;
  ~RendezvousProcess();

  // True when the child made an id; error() says otherwise why not.
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  const chorusUniqueId& id() const { return id_; }

 private:
  pid_t pid_ = -1;
  int stop_fd_ = -1;  // closing it tells the child to exit
  chorusUniqueId id_{};
  std::string error_;
};

}  // namespace chorus_test
