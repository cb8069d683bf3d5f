// Strangers without the secret connected to every listener of a job (the
// rendezvous root, the TCP transport's listeners, the recovery listeners
// that shrink uses, and those of the shrunk communicator as they appear):
// silent ones, ones that trickle junk, ones that send a junk handshake.
// Init and a healthy shrink still succeed, and take no longer than without
// them (one silent stranger used to cost 5 s at each listener). Ranks are
// threads over TCP on loopback.
#include <gtest/gtest.h>

#include <dirent.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/api/harness.h"
#include "tests/transports/intruders.h"

namespace chorus_test {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kRanks = 4;
constexpr double kAllowedExtraSeconds = 2.0;

// Inodes of this process's sockets, from the /proc/self/fd links. Read by
// path (readlink), never through the descriptors: library threads open and
// close sockets meanwhile, and an fstat of one racing its close is a race
// that ThreadSanitizer reports.
std::set<unsigned long> SocketInodes() {
  std::set<unsigned long> inodes;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return inodes;
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    const std::string path = std::string("/proc/self/fd/") + entry->d_name;
    char target[64] = {};
    const ssize_t length = ::readlink(path.c_str(), target, sizeof(target) - 1);
    unsigned long inode = 0;
    if (length > 0 && std::sscanf(target, "socket:[%lu]", &inode) == 1) inodes.insert(inode);
  }
  ::closedir(dir);
  return inodes;
}

// Adds "<loopback>:port" for every listening socket of `table`
// (/proc/self/net/tcp or tcp6) whose inode is in `ours`.
void AddListeners(const char* table, const char* loopback, const std::set<unsigned long>& ours,
                  std::set<std::string>* found) {
  FILE* file = std::fopen(table, "r");
  if (file == nullptr) return;
  char line[512];
  std::fgets(line, sizeof(line), file);  // the header
  while (std::fgets(line, sizeof(line), file) != nullptr) {
    // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
    char local[64] = {}, state[8] = {};
    unsigned long inode = 0;
    if (std::sscanf(line, "%*s %63s %*s %7s %*s %*s %*s %*s %*s %lu", local, state, &inode) != 3) continue;
    if (std::string(state) != "0A" || ours.count(inode) == 0) continue;  // 0A: LISTEN
    const char* colon = std::strrchr(local, ':');
    if (colon == nullptr) continue;
    const unsigned long port = std::strtoul(colon + 1, nullptr, 16);
    found->insert(std::string(loopback) + ":" + std::to_string(port));
  }
  std::fclose(file);
}

// "127.0.0.1:port" of every listening TCP socket of this process.
std::set<std::string> ListeningAddresses() {
  const std::set<unsigned long> ours = SocketInodes();
  std::set<std::string> found;
  AddListeners("/proc/self/net/tcp", "127.0.0.1", ours, &found);
  AddListeners("/proc/self/net/tcp6", "[::1]", ours, &found);
  return found;
}

// Attacks every listener of this process as soon as it appears, from a
// thread, until destroyed.
class Watcher {
 public:
  explicit Watcher(Intruders* intruders) : intruders_(intruders) {
    Scan();  // the listeners that exist already are attacked before we return
    thread_ = std::thread([this] {
      while (!stop_) {
        Scan();
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    });
  }
  ~Watcher() {
    stop_ = true;
    thread_.join();
  }
  size_t attacked() {
    std::lock_guard<std::mutex> lock(mutex_);
    return attacked_.size();
  }

 private:
  void Scan() {
    for (const std::string& address : ListeningAddresses()) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!attacked_.insert(address).second) continue;
      }
      intruders_->Attack(address, 4, 2, 2);
    }
  }

  Intruders* intruders_;
  std::mutex mutex_;
  std::set<std::string> attacked_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

struct Timings {
  double init_s = 0;
  double shrink_s = 0;
};

// Init of kRanks ranks (rank 0 a little late, so that the others' listeners
// exist for a while), a healthy shrink, an allreduce on the result.
Timings InitAndShrink(bool attacked) {
  Timings timings;
  chorusUniqueId id;
  EXPECT_EQ(chorusGetUniqueId(&id), chorusSuccess);
  Intruders intruders;
  std::unique_ptr<Watcher> watcher;
  if (attacked) watcher = std::make_unique<Watcher>(&intruders);
  if (attacked) {
    EXPECT_GE(watcher->attacked(), 1u);  // the rendezvous root
  }

  std::vector<chorusComm_t> comms(kRanks, nullptr), shrunk(kRanks, nullptr);
  std::vector<chorusResult_t> init_results(kRanks, chorusInternalError), shrink_results(kRanks, chorusInternalError);
  auto start = Clock::now();
  RunOnThreads(kRanks, [&](int rank) {
    if (rank == 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    init_results[rank] = chorusCommInitRank(&comms[rank], kRanks, id, rank);
  });
  timings.init_s = std::chrono::duration<double>(Clock::now() - start).count();
  for (int rank = 0; rank < kRanks; ++rank) {
    EXPECT_EQ(init_results[rank], chorusSuccess) << "rank " << rank << ": " << chorusGetLastError(nullptr);
  }
  if (attacked) {
    // The root, every recovery listener, and the TCP listeners of ranks 1
    // and 2 at least (they wait for rank 0 with them open; each closes once
    // its mesh is complete, so later ones may have gone unseen).
    EXPECT_GE(watcher->attacked(), 1u + kRanks + 2);
  }

  start = Clock::now();
  RunOnThreads(kRanks, [&](int rank) {
    if (init_results[rank] == chorusSuccess) shrink_results[rank] = chorusCommShrink(comms[rank], &shrunk[rank]);
  });
  timings.shrink_s = std::chrono::duration<double>(Clock::now() - start).count();
  RunOnThreads(kRanks, [&](int rank) {
    EXPECT_EQ(shrink_results[rank], chorusSuccess) << "rank " << rank << ": " << Describe(shrink_results[rank], comms[rank]);
    if (shrink_results[rank] == chorusSuccess) {
      int size = 0;
      EXPECT_EQ(chorusCommCount(shrunk[rank], &size), chorusSuccess);
      EXPECT_EQ(size, kRanks);
      int value = rank + 1;
      EXPECT_EQ(chorusAllReduce(&value, &value, 1, chorusInt32, chorusSum, shrunk[rank], nullptr), chorusSuccess);
      EXPECT_EQ(value, kRanks * (kRanks + 1) / 2);
      chorusCommDestroy(shrunk[rank]);
    }
    if (comms[rank] != nullptr) chorusCommDestroy(comms[rank]);
  });
  return timings;
}

class UnauthenticatedConnectionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("CHORUS_TRANSPORT", "tcp", 1);
    setenv("CHORUS_SOCKET_IFNAME", "lo", 1);
  }
  void TearDown() override {
    unsetenv("CHORUS_TRANSPORT");
    unsetenv("CHORUS_SOCKET_IFNAME");
  }
};

TEST_F(UnauthenticatedConnectionsTest, DelayNeitherInitNorAHealthyShrink) {
  const Timings quiet = InitAndShrink(false);
  const Timings attacked = InitAndShrink(true);
  std::printf("init %.3f s quiet, %.3f s attacked; shrink %.3f s quiet, %.3f s attacked\n", quiet.init_s,
              attacked.init_s, quiet.shrink_s, attacked.shrink_s);
  EXPECT_LT(attacked.init_s, quiet.init_s + kAllowedExtraSeconds);
  EXPECT_LT(attacked.shrink_s, quiet.shrink_s + kAllowedExtraSeconds);
}

}  // namespace
}  // namespace chorus_test
