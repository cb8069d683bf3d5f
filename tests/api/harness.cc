#include "tests/api/harness.h"

#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <thread>

namespace chorus_test {
namespace {

// Completion flags shared by the rank threads and the waiting thread; owned
// by a shared_ptr so an aborted wait never leaves threads with a dangling
// reference.
struct Completion {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<bool> done;
  int remaining = 0;
};

// How long ForkRanks waits for threads that are ending (a rendezvous root
// whose ranks all joined, say) before refusing to fork.
constexpr Millis kThreadPatience{10000};
}  // namespace

void RunOnThreads(int nranks, const std::function<void(int rank)>& body, Millis deadline) {
  auto completion = std::make_shared<Completion>();
  completion->done.assign(nranks, false);
  completion->remaining = nranks;
  std::vector<std::thread> threads;
  threads.reserve(nranks);
  for (int rank = 0; rank < nranks; ++rank) {
    threads.emplace_back([completion, &body, rank] {
      body(rank);
      std::lock_guard<std::mutex> lock(completion->mutex);
      completion->done[rank] = true;
      --completion->remaining;
      completion->changed.notify_all();
    });
  }
  std::unique_lock<std::mutex> lock(completion->mutex);
  const bool finished = completion->changed.wait_for(lock, deadline, [&] { return completion->remaining == 0; });
  if (!finished) {
    std::fprintf(stderr, "HANG: %d of %d rank threads still running after %lld ms:", completion->remaining, nranks,
                 static_cast<long long>(deadline.count()));
    for (int rank = 0; rank < nranks; ++rank) {
      if (!completion->done[rank]) std::fprintf(stderr, " rank %d", rank);
    }
    std::fprintf(stderr, "\n");
    std::fflush(nullptr);
    std::abort();
  }
  lock.unlock();
  for (auto& thread : threads) thread.join();
}

ThreadComms ThreadComms::InitRank(int nranks, const chorusConfig_t* config) {
  ThreadComms group;
  chorusUniqueId id;
  chorusResult_t result = chorusGetUniqueId(&id);
  if (result != chorusSuccess) {
    group.error_ = "chorusGetUniqueId: " + Describe(result, nullptr);
    return group;
  }
  group.comms_.assign(nranks, nullptr);
  std::vector<chorusResult_t> results(nranks, chorusSuccess);
  std::vector<std::string> messages(nranks);
  RunOnThreads(nranks, [&](int rank) {
    if (config == nullptr) {
      results[rank] = chorusCommInitRank(&group.comms_[rank], nranks, id, rank);
    } else {
      chorusConfig_t copy = *config;  // the library may not keep a const promise
      results[rank] = chorusCommInitRankConfig(&group.comms_[rank], nranks, id, rank, &copy);
    }
    if (results[rank] != chorusSuccess) messages[rank] = chorusGetLastError(nullptr);
  });
  for (int rank = 0; rank < nranks; ++rank) {
    if (results[rank] != chorusSuccess) {
      group.error_ +=
          "rank " + std::to_string(rank) + ": " + chorusGetErrorString(results[rank]) + ": " + messages[rank] + "\n";
      group.comms_[rank] = nullptr;
    }
  }
  return group;
}

ThreadComms ThreadComms::InitAll(int nranks) {
  ThreadComms group;
  group.comms_.assign(nranks, nullptr);
  chorusResult_t result = chorusCommInitAll(group.comms_.data(), nranks, nullptr);
  if (result != chorusSuccess) {
    group.error_ = "chorusCommInitAll: " + Describe(result, nullptr);
    group.comms_.assign(nranks, nullptr);
  }
  return group;
}

ThreadComms::ThreadComms(ThreadComms&& other) noexcept
    : comms_(std::move(other.comms_)), error_(std::move(other.error_)) {
  other.comms_.clear();
}

ThreadComms& ThreadComms::operator=(ThreadComms&& other) noexcept {
  if (this != &other) {
    DestroyAll();
    comms_ = std::move(other.comms_);
    error_ = std::move(other.error_);
    other.comms_.clear();
  }
  return *this;
}

ThreadComms::~ThreadComms() { DestroyAll(); }

void ThreadComms::Run(const std::function<void(int rank, chorusComm_t comm)>& body, Millis deadline) const {
  RunOnThreads(
      size(), [&](int rank) { body(rank, comms_[rank]); }, deadline);
}

void ThreadComms::AbortAll() {
  for (chorusComm_t& comm : comms_) {
    if (comm != nullptr) (void)chorusCommAbort(comm);
    comm = nullptr;
  }
}

chorusComm_t ThreadComms::Release(int rank) {
  chorusComm_t comm = comms_[rank];
  comms_[rank] = nullptr;
  return comm;
}

void ThreadComms::DestroyAll() {
  if (comms_.empty()) return;
  // Concurrently: destroy may wait for peers' in-flight traffic.
  RunOnThreads(size(), [&](int rank) {
    if (comms_[rank] != nullptr) (void)chorusCommDestroy(comms_[rank]);
  });
  comms_.clear();
}

chorusConfig_t MakeConfig(const char* algo, int timeout_ms) {
  chorusConfig_t config = CHORUS_CONFIG_INITIALIZER;
  config.algo = algo;
  config.timeoutMs = timeout_ms;
  return config;
}

std::string Describe(chorusResult_t result, chorusComm_t comm) {
  const char* last = chorusGetLastError(comm);
  return std::string(chorusGetErrorString(result)) + " (" + std::to_string(result) + "): " + (last ? last : "(null)");
}

std::vector<ChildOutcome> ForkRanks(int nranks, const std::function<int(int rank)>& body, Millis deadline) {
  std::vector<ChildOutcome> outcomes(nranks);
  const int threads = WaitUntilSingleThreaded(kThreadPatience);
  if (threads != 1) {
    for (int rank = 0; rank < nranks; ++rank) {
      outcomes[rank].rank = rank;
      outcomes[rank].not_forked = "not forked: this process runs " + std::to_string(threads) +
                                  " threads, and a child forked now could hang on a lock one of them holds";
    }
    return outcomes;
  }
  std::fflush(nullptr);  // buffered output would otherwise be printed by every child
  for (int rank = 0; rank < nranks; ++rank) {
    outcomes[rank].rank = rank;
    pid_t pid = fork();
    if (pid == 0) {
      int code = body(rank);
      std::fflush(nullptr);
      _exit(code);
    }
    outcomes[rank].pid = pid;  // -1 on failure: reported as not exited
  }
  const auto give_up_at = std::chrono::steady_clock::now() + deadline;
  int running = 0;
  for (const auto& outcome : outcomes) running += outcome.pid > 0 ? 1 : 0;
  while (running > 0) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      for (auto& outcome : outcomes) {
        if (outcome.pid != pid) continue;
        outcome.exited = WIFEXITED(status);
        outcome.exit_code = outcome.exited ? WEXITSTATUS(status) : -1;
        outcome.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        --running;
      }
      continue;
    }
    if (std::chrono::steady_clock::now() >= give_up_at) {
      for (auto& outcome : outcomes) {
        if (outcome.pid <= 0 || outcome.exited || outcome.signal != 0) continue;
        kill(outcome.pid, SIGKILL);
        outcome.killed_at_deadline = true;
        waitpid(outcome.pid, &status, 0);
        outcome.signal = SIGKILL;
        --running;
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return outcomes;
}

std::string Describe(const ChildOutcome& outcome) {
  std::string text = "rank " + std::to_string(outcome.rank) + " (pid " + std::to_string(outcome.pid) + "): ";
  if (!outcome.not_forked.empty()) return text + outcome.not_forked;
  if (outcome.pid <= 0) return text + "fork failed";
  if (outcome.killed_at_deadline) return text + "still running at the deadline, killed";
  if (outcome.exited) return text + "exit code " + std::to_string(outcome.exit_code);
  return text + "killed by signal " + std::to_string(outcome.signal);
}

std::set<std::string> SharedMemorySegments() {
  std::set<std::string> names;
  if (DIR* dir = opendir("/dev/shm")) {
    while (dirent* entry = readdir(dir)) {
      if (std::string(entry->d_name).rfind("chorus-shm-", 0) == 0) names.insert(entry->d_name);
    }
    closedir(dir);
  }
  return names;
}

bool MappedByAnyone(const std::string& name) {
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return true;
  bool mapped = false;
  while (dirent* entry = readdir(proc)) {
    if (mapped || entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    std::ifstream maps(std::string("/proc/") + entry->d_name + "/maps");
    for (std::string line; !mapped && std::getline(maps, line);) mapped = line.find(name) != std::string::npos;
  }
  closedir(proc);
  return mapped;
}

}  // namespace chorus_test
