// ShmTransport when /dev/shm is too small, with a configured ring size, and
// when a rank dies during set-up: clear errors, and nothing left in /dev/shm.
#include <dirent.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/transports/shm_test_util.h"
#include "transports/shm/shm_names.h"
#include "transports/shm/shm_segment.h"
#include "transports/shm/shm_transport.h"
#include "transports/transport_registry.h"
#include "transports/socket/socket.h"

namespace chorus {
namespace {

using namespace shm_test;

// Options with a secret of its own, so the communicator's segments are ours alone.
TransportOptions FreshOptions(int rank, int nranks, const uint8_t secret[16]) {
  TransportOptions options = Options(rank, nranks);
  std::memcpy(options.secret, secret, sizeof(options.secret));
  return options;
}

void NewSecret(uint8_t secret[16]) { ASSERT_TRUE(FillRandom(secret, 16).ok()); }

// Files in /dev/shm of the communicator with `secret`.
std::vector<std::string> SegmentsOf(const uint8_t secret[16]) {
  const std::string prefix = shm::CommSegmentPrefix(secret).substr(1);
  std::vector<std::string> found;
  DIR* dir = ::opendir("/dev/shm");
  if (dir == nullptr) return found;
  while (const dirent* entry = ::readdir(dir)) {
    if (std::strncmp(entry->d_name, prefix.c_str(), prefix.size()) == 0) found.push_back(entry->d_name);
  }
  ::closedir(dir);
  return found;
}

TEST(ShmRobustnessTest, SegmentLargerThanDevShmFailsWithAClearError) {
  struct statvfs space = {};
  ASSERT_EQ(::statvfs("/dev/shm", &space), 0);
  if (space.f_blocks == 0) GTEST_SKIP() << "/dev/shm has no size limit";
  const size_t total = static_cast<size_t>(space.f_blocks) * space.f_frsize;
  uint8_t secret[16];
  NewSecret(secret);
  TransportOptions options = FreshOptions(0, 2, secret);
  ShmTuning tuning;
  tuning.ring_bytes = (total + 63) / 64 * 64;  // two rings: twice the file system
  std::unique_ptr<Transport> transport;
  const auto start = std::chrono::steady_clock::now();
  Status status = CreateShmTransport(options, &transport, tuning);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(transport, nullptr);
  EXPECT_EQ(status.code(), chorusSystemError) << status.message();
  for (const std::string& part :
       {std::string("/dev/shm"), std::string("/chorus-shm-"), std::string("CHORUS_SHM_RING_BYTES"),
        std::string("CHORUS_TRANSPORT=tcp"), StrCat(shm::SegmentBytes(2, tuning.ring_bytes), " bytes")}) {
    EXPECT_NE(status.message().find(part), std::string::npos) << "no '" << part << "' in: " << status.message();
  }
  EXPECT_TRUE(SegmentsOf(secret).empty());
}

// The free space is read after the failed reservation; ranks creating or
// removing segments at the same time can leave more free than was needed
// by then, which must not read as "needs 4 MB but has 6 MB free".
TEST(ShmRobustnessTest, ShortageMessageNeverClaimsEnoughFreeSpace) {
  EXPECT_EQ(shm::DescribeShortage(4096, true, 1024, 65536), "/dev/shm has 1024 bytes free (of 65536)");
  const std::string raced = shm::DescribeShortage(4096, true, 8192, 65536);
  EXPECT_EQ(raced.find("has 8192 bytes free"), std::string::npos) << raced;
  EXPECT_NE(raced.find("ran out"), std::string::npos) << raced;
  EXPECT_NE(raced.find("8192 bytes free (of 65536) just after"), std::string::npos) << raced;
  EXPECT_NE(raced.find("at the same time"), std::string::npos) << raced;
  EXPECT_EQ(shm::DescribeShortage(4096, false, 0, 0), "/dev/shm has no room");
}

TEST(ShmRobustnessTest, AbsurdSizeFailsWithoutSigbusOrLeftovers) {
  uint8_t secret[16];
  NewSecret(secret);
  TransportOptions options = FreshOptions(0, 1, secret);
  ShmTuning tuning;
  tuning.ring_bytes = size_t{1} << 40;  // 1 TiB
  std::unique_ptr<Transport> transport;
  Status status = CreateShmTransport(options, &transport, tuning);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("CHORUS_SHM_RING_BYTES"), std::string::npos) << status.message();
  EXPECT_TRUE(SegmentsOf(secret).empty());
}

TEST(ShmRobustnessTest, ConfiguredRingSizeIsUsedAndAnnounced) {
  uint8_t secret[16];
  NewSecret(secret);
  TransportOptions options = FreshOptions(0, 2, secret);
  // CHORUS_SHM_RING_BYTES reaches the transport through its descriptor.
  TransportVars vars;
  vars.Set("CHORUS_SHM_RING_BYTES", "256K");
  std::unique_ptr<Transport> transport;
  ASSERT_TRUE(ShmTransportDescriptor().create(ShmTransportDescriptor(), options, vars, &transport).ok());
  const std::string address = transport->LocalAddress();
  EXPECT_NE(address.find(StrCat(" ", 256 << 10, " ")), std::string::npos) << address;
  EXPECT_EQ(SegmentName(address).rfind(shm::SegmentPrefix(secret, 0, ::getpid()), 0), 0u) << address;
  // An explicit ShmTuning::ring_bytes still wins (tests use it).
  ShmTuning tuning;
  tuning.ring_bytes = 512 << 10;
  std::unique_ptr<Transport> tuned;
  ASSERT_TRUE(CreateShmTransport(options, &tuned, tuning).ok());
  EXPECT_NE(tuned->LocalAddress().find(StrCat(" ", 512 << 10, " ")), std::string::npos);
}

TEST(ShmRobustnessTest, RejectsARingTooSmallForTwoRecords) {
  TransportOptions options = Options(0, 2);
  ShmTuning tuning;
  tuning.ring_bytes = 4096;
  std::unique_ptr<Transport> transport;
  Status status = CreateShmTransport(options, &transport, tuning);
  EXPECT_EQ(status.code(), chorusInvalidArgument) << status.message();
}

// A child process creates rank 1's transport, publishes its address and
// waits to be killed; rank 0 (this process) goes on.
class DyingRank {
 public:
  struct Board {
    std::atomic<int> created;
    char address[512];
  };

  explicit DyingRank(const uint8_t secret[16]) {
    void* mapped = ::mmap(nullptr, sizeof(Board), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    board_ = mapped == MAP_FAILED ? nullptr : new (mapped) Board();
    if (board_ == nullptr) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      std::unique_ptr<Transport> transport;
      if (!CreateShmTransport(FreshOptions(1, 2, secret), &transport).ok()) ::_exit(1);
      std::strncpy(board_->address, transport->LocalAddress().c_str(), sizeof(board_->address) - 1);
      board_->created.store(1);
      for (int i = 0; i < 600; ++i) ::usleep(100000);  // killed long before
      ::_exit(2);
    }
  }
  ~DyingRank() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (board_ != nullptr) ::munmap(board_, sizeof(Board));
  }

  bool WaitCreated() const {
    const Deadline deadline = Deadline::AfterMs(kTestTimeoutMs);
    while (board_ != nullptr && board_->created.load() == 0 && !deadline.Expired()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return board_ != nullptr && board_->created.load() == 1;
  }
  std::string address() const { return board_->address; }
  // SIGKILL; `reap` false leaves a zombie, as a launcher that has not yet waited would.
  void Kill(bool reap) {
    ::kill(pid_, SIGKILL);
    if (reap) {
      ::waitpid(pid_, nullptr, 0);
      reaped_ = true;
    }
  }

 private:
  Board* board_ = nullptr;
  pid_t pid_ = -1;
  bool reaped_ = false;
};

TEST(ShmRobustnessTest, PeerKilledBeforeConnectFinishesLeavesNoSegment) {
  for (bool reap : {false, true}) {
    SCOPED_TRACE(reap ? "reaped" : "zombie");
    uint8_t secret[16];
    NewSecret(secret);
    std::unique_ptr<Transport> mine;
    ASSERT_TRUE(CreateShmTransport(FreshOptions(0, 2, secret), &mine).ok());
    DyingRank child(secret);
    ASSERT_TRUE(child.WaitCreated());
    const std::vector<std::string> addresses = {mine->LocalAddress(), child.address()};
    EXPECT_EQ(SegmentsOf(secret).size(), 2u);
    child.Kill(reap);
    const auto start = std::chrono::steady_clock::now();
    Status status = mine->Connect(addresses, Deadline::AfterMs(kTestTimeoutMs));
    const auto took = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(status.code(), chorusRemoteError) << status.message();
    EXPECT_NE(status.message().find("peer 1"), std::string::npos) << status.message();
    EXPECT_LT(took, std::chrono::seconds(2)) << "the death is seen, not the deadline";
    EXPECT_TRUE(SegmentsOf(secret).empty());
  }
}

TEST(ShmRobustnessTest, PeerKilledBeforeTheAddressExchangeLeavesNoSegment) {
  uint8_t secret[16];
  NewSecret(secret);
  std::unique_ptr<Transport> mine;
  ASSERT_TRUE(CreateShmTransport(FreshOptions(0, 2, secret), &mine).ok());
  DyingRank child(secret);
  ASSERT_TRUE(child.WaitCreated());
  child.Kill(/*reap=*/true);
  EXPECT_EQ(SegmentsOf(secret).size(), 2u);
  // The rendezvous fails; the unconnected transport is dropped.
  mine.reset();
  EXPECT_TRUE(SegmentsOf(secret).empty());
}

// A rank killed after set-up finished elsewhere (its peers mapped its
// segment, it never unlinked the name) leaves nothing once a survivor's
// connected transport shuts down.
TEST(ShmRobustnessTest, ShutdownAfterSetUpRemovesSegmentsOfDeadRanks) {
  uint8_t secret[16];
  NewSecret(secret);
  std::vector<std::unique_ptr<Transport>> ranks(2);
  ASSERT_TRUE(CreateShmTransport(FreshOptions(0, 2, secret), &ranks[0]).ok());
  ASSERT_TRUE(CreateShmTransport(FreshOptions(1, 2, secret), &ranks[1]).ok());
  const std::vector<std::string> addresses = {ranks[0]->LocalAddress(), ranks[1]->LocalAddress()};
  std::vector<Status> connected(2);
  std::thread other([&] { connected[1] = ranks[1]->Connect(addresses, Deadline::AfterMs(kTestTimeoutMs)); });
  connected[0] = ranks[0]->Connect(addresses, Deadline::AfterMs(kTestTimeoutMs));
  other.join();
  ASSERT_TRUE(connected[0].ok() && connected[1].ok()) << connected[0].message() << connected[1].message();
  DyingRank child(secret);  // a segment of the communicator whose creator dies
  ASSERT_TRUE(child.WaitCreated());
  child.Kill(/*reap=*/true);
  EXPECT_EQ(SegmentsOf(secret).size(), 1u);  // the connected ranks unlinked theirs
  ranks[0].reset();
  EXPECT_TRUE(SegmentsOf(secret).empty());
}

TEST(ShmRobustnessTest, LiveSegmentsOfTheCommunicatorAreKept) {
  uint8_t secret[16];
  NewSecret(secret);
  std::unique_ptr<Transport> live, dropped;
  ASSERT_TRUE(CreateShmTransport(FreshOptions(0, 2, secret), &live).ok());
  ASSERT_TRUE(CreateShmTransport(FreshOptions(1, 2, secret), &dropped).ok());
  dropped.reset();  // its owner (this process) lives: only its own name goes
  const std::vector<std::string> left = SegmentsOf(secret);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ("/" + left[0], SegmentName(live->LocalAddress()));
}

}  // namespace
}  // namespace chorus
