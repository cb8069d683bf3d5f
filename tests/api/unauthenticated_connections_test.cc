// Strangers without the secret connected to every listener of a job (the
// rendezvous root, the TCP transport's listeners, the recovery listeners
// that shrink uses, and those of the shrunk communicator as they appear):
// silent ones, ones that trickle junk, ones that send a junk handshake.
// Init and a healthy shrink still succeed, and take no longer than without
// them (one silent stranger used to cost 5 s at each listener). Ranks are
// threads over TCP on loopback.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
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

// "127.0.0.1:port" of every listening TCP socket of this process.
std::set<std::string> ListeningAddresses() {
  std::set<std::string> found;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return found;
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    const int fd = std::atoi(entry->d_name);
    struct stat info;
    if (::fstat(fd, &info) != 0 || !S_ISSOCK(info.st_mode)) continue;
    int listening = 0;
    socklen_t length = sizeof(listening);
    if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &length) != 0 || !listening) continue;
    sockaddr_storage local = {};
    socklen_t local_length = sizeof(local);
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_length) != 0) continue;
    if (local.ss_family == AF_INET) {
      const auto* v4 = reinterpret_cast<const sockaddr_in*>(&local);
      found.insert("127.0.0.1:" + std::to_string(ntohs(v4->sin_port)));
    } else if (local.ss_family == AF_INET6) {
      const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&local);
      found.insert("[::1]:" + std::to_string(ntohs(v6->sin6_port)));
    }
  }
  ::closedir(dir);
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
