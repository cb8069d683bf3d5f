#include "core/trace_signal.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "base/log.h"

namespace chorus {
namespace {

// The self-pipe's write end, read by the handler (an int: signal-safe), and
// the process that installed it: a forked child inherits the handler and
// the pipe but not the dump thread, so it neither writes into its parent's
// pipe nor dumps its parent's communicators; it installs its own.
std::atomic<int> g_signal_pipe{-1};
std::atomic<pid_t> g_installed_by{0};
std::atomic<uint64_t> g_signals_handled{0};

// The dumps to run per signal; see the header for why this is process-wide.
struct DumpList {
  std::mutex mutex;
  uint64_t next_id = 1;
  std::vector<std::pair<uint64_t, std::function<void()>>> dumps;
};

// Never destroyed: the dump thread outlives static destructors. A child of
// fork gets a fresh one (the parent's may have been locked at the fork).
std::atomic<DumpList*> g_dumps{nullptr};
std::mutex g_install_mutex;

DumpList& Dumps() {
  static std::mutex create_mutex;
  DumpList* list = g_dumps.load(std::memory_order_acquire);
  if (list != nullptr) return *list;
  std::lock_guard<std::mutex> lock(create_mutex);
  if (g_dumps.load() == nullptr) g_dumps.store(new DumpList);
  return *g_dumps.load();
}

void OnSignal(int) {
  const int saved_errno = errno;
  const int fd = g_signal_pipe.load(std::memory_order_relaxed);
  if (fd >= 0 && g_installed_by.load(std::memory_order_relaxed) == getpid()) {
    const char byte = 1;
    ssize_t ignored = write(fd, &byte, 1);  // a full pipe already holds a pending dump
    (void)ignored;
  }
  errno = saved_errno;
}

void DumpThread(int read_fd, DumpList* dumps) {
  char bytes[64];
  for (;;) {
    const ssize_t n = read(read_fd, bytes, sizeof(bytes));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    DumpList& list = *dumps;
    {
      std::lock_guard<std::mutex> lock(list.mutex);
      for (auto& entry : list.dumps) entry.second();
    }
    g_signals_handled.fetch_add(1, std::memory_order_release);
  }
}

void Install() {
  g_installed_by.store(getpid());  // decided for this process, installed or not
  struct sigaction current = {};
  if (sigaction(SIGUSR1, nullptr, &current) != 0) return;
  const bool inherited = current.sa_handler == OnSignal && (current.sa_flags & SA_SIGINFO) == 0;
  if (inherited) {
    // Ours, from the process that forked this one.
    g_dumps.store(new DumpList);
  } else if (current.sa_handler != SIG_DFL || (current.sa_flags & SA_SIGINFO) != 0) {
    CHORUS_WARN("INIT", "SIGUSR1 already has a handler: CHORUS_TRACE_FILE dumps only on errors and "
                "chorusCommDumpTrace");
    return;
  }
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    CHORUS_WARN("INIT", "no pipe for the SIGUSR1 trace dumps: ", std::strerror(errno));
    return;
  }
  fcntl(fds[1], F_SETFL, O_NONBLOCK);  // the handler never blocks
  g_signal_pipe.store(fds[1]);
  std::thread(DumpThread, fds[0], &Dumps()).detach();
  struct sigaction action = {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &action, nullptr);
}

}  // namespace

void InstallTraceSignalHandler() {
  std::lock_guard<std::mutex> lock(g_install_mutex);
  if (g_installed_by.load() != getpid()) Install();
}

uint64_t RegisterTraceDump(std::function<void()> dump) {
  DumpList& list = Dumps();
  std::lock_guard<std::mutex> lock(list.mutex);
  const uint64_t id = list.next_id++;
  list.dumps.emplace_back(id, std::move(dump));
  return id;
}

void UnregisterTraceDump(uint64_t id) {
  DumpList& list = Dumps();
  std::lock_guard<std::mutex> lock(list.mutex);
  for (size_t i = 0; i < list.dumps.size(); ++i) {
    if (list.dumps[i].first == id) {
      list.dumps.erase(list.dumps.begin() + static_cast<long>(i));
      return;
    }
  }
}

uint64_t TraceSignalsHandled() { return g_signals_handled.load(std::memory_order_acquire); }

}  // namespace chorus
