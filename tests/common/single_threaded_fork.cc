#include "tests/common/single_threaded_fork.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>

namespace chorus_test {
namespace {

using Millis = std::chrono::milliseconds;

// How long the rendezvous process waits for threads that are ending before
// refusing to fork.
constexpr Millis kThreadPatience{10000};
// How long the rendezvous process may take to make the id, and to exit once told.
constexpr Millis kRendezvousStartDeadline{30000};
constexpr Millis kRendezvousExitDeadline{5000};

// ThreadSanitizer runs a background thread of its own in every process
// and takes its own locks around fork: it is not one of ours.
#if defined(__SANITIZE_THREAD__)
constexpr int kSanitizerThreads = 1;
#else
constexpr int kSanitizerThreads = 0;
#endif

// Threads of this process: the entries of /proc/self/task, less the
// sanitizer's own.
int ThreadCount() {
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return -1;
  int threads = 0;
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.') ++threads;
  }
  closedir(dir);
  return threads > kSanitizerThreads ? threads - kSanitizerThreads : threads;
}

// Reads exactly `bytes` from fd before `deadline`; false on EOF, error or time.
bool ReadAll(int fd, void* data, size_t bytes, Millis deadline) {
  const auto give_up_at = std::chrono::steady_clock::now() + deadline;
  auto* out = static_cast<char*>(data);
  while (bytes > 0) {
    const auto left = std::chrono::duration_cast<Millis>(give_up_at - std::chrono::steady_clock::now()).count();
    if (left <= 0) return false;
    pollfd readable{fd, POLLIN, 0};
    const int ready = poll(&readable, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (ready < 0 && errno != EINTR) return false;
    if (ready <= 0) continue;
    const ssize_t got = read(fd, out, bytes);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    out += got;
    bytes -= static_cast<size_t>(got);
  }
  return true;
}

// What the rendezvous process sends back: chorusGetUniqueId's result, and
// the id or the error message.
struct RendezvousReply {
  int32_t result = -1;
  chorusUniqueId id{};
  char error[512] = {};
};

}  // namespace

int WaitUntilSingleThreaded(Millis patience) {
  const auto give_up_at = std::chrono::steady_clock::now() + patience;
  int threads = ThreadCount();
  while (threads != 1 && std::chrono::steady_clock::now() < give_up_at) {
    std::this_thread::sleep_for(Millis(10));
    threads = ThreadCount();
  }
  return threads;
}

RendezvousProcess::RendezvousProcess() {
  const int threads = WaitUntilSingleThreaded(kThreadPatience);
  if (threads != 1) {
    error_ = "rendezvous process not forked: this process runs " + std::to_string(threads) + " threads";
    return;
  }
  int reply_pipe[2];
  int stop_pipe[2];
  if (pipe2(reply_pipe, O_CLOEXEC) != 0) {
    error_ = std::string("pipe: ") + std::strerror(errno);
    return;
  }
  if (pipe2(stop_pipe, O_CLOEXEC) != 0) {
    error_ = std::string("pipe: ") + std::strerror(errno);
    close(reply_pipe[0]);
    close(reply_pipe[1]);
    return;
  }
  std::fflush(nullptr);
  pid_ = fork();
  if (pid_ == 0) {
    close(reply_pipe[0]);
    close(stop_pipe[1]);
    RendezvousReply reply;
    reply.result = chorusGetUniqueId(&reply.id);
    if (reply.result != chorusSuccess) {
      std::snprintf(reply.error, sizeof(reply.error), "%s", chorusGetLastError(nullptr));
    }
    // One write below PIPE_BUF is atomic; the parent reads it whole or sees EOF.
    const bool sent = write(reply_pipe[1], &reply, sizeof(reply)) == static_cast<ssize_t>(sizeof(reply));
    close(reply_pipe[1]);
    // Serve until the parent closes its end (or dies): read returns 0 then.
    char byte;
    while (read(stop_pipe[0], &byte, 1) < 0 && errno == EINTR) {
    }
    _exit(sent ? 0 : 1);
  }
  close(reply_pipe[1]);
  close(stop_pipe[0]);
  if (pid_ < 0) {
    error_ = std::string("fork: ") + std::strerror(errno);
    close(reply_pipe[0]);
    close(stop_pipe[1]);
    return;
  }
  stop_fd_ = stop_pipe[1];
  RendezvousReply reply;
  const bool received = ReadAll(reply_pipe[0], &reply, sizeof(reply), kRendezvousStartDeadline);
  close(reply_pipe[0]);
  if (!received) {
    error_ = "the rendezvous process sent no id";
  } else if (reply.result != chorusSuccess) {
    reply.error[sizeof(reply.error) - 1] = '\0';
    error_ = std::string("chorusGetUniqueId in the rendezvous process: ") +
             chorusGetErrorString(static_cast<chorusResult_t>(reply.result)) + ": " + reply.error;
  } else {
    id_ = reply.id;
  }
}

RendezvousProcess::~RendezvousProcess() {
  if (stop_fd_ >= 0) close(stop_fd_);
  if (pid_ <= 0) return;
  const auto give_up_at = std::chrono::steady_clock::now() + kRendezvousExitDeadline;
  int status = 0;
  while (waitpid(pid_, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= give_up_at) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      return;
    }
    std::this_thread::sleep_for(Millis(5));
  }
}

}  // namespace chorus_test
