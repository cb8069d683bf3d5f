// SweepOrphanedSegments: removes /dev/shm segments whose creator is gone,
// whose lock is free and that are old enough; keeps everything else. Every
// file here carries a random tag of this test, and every sweep is narrowed
// to it, so no other segment on the host is touched; the clock is moved
// instead of waiting.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "base/status.h"
#include "transports/shm/shm_layout.h"
#include "transports/shm/shm_names.h"
#include "transports/shm/shm_segment.h"
#include "transports/socket/socket.h"

namespace chorus {
namespace {

using std::chrono::minutes;
using std::chrono::system_clock;

// A pid that named a process which has exited and been reaped.
pid_t DeadPid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

class OrphanSweepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    uint8_t random[8];
    ASSERT_TRUE(FillRandom(random, sizeof(random)).ok());
    static const char kHex[] = "0123456789abcdef";
    prefix_ = "chorus-shm-";
    for (uint8_t byte : random) {
      prefix_.push_back(kHex[byte >> 4]);
      prefix_.push_back(kHex[byte & 15]);
    }
    prefix_ += "-";
  }
  void TearDown() override {
    for (const std::string& file : made_) ::shm_unlink(("/" + file).c_str());
  }

  // A file as ShmSegment::Create makes it (mode 0600, a header naming
  // `header_pid`, 0 for none) for rank 1 of process `pid`; returns its name.
  std::string MakeSegment(pid_t pid, pid_t header_pid, mode_t mode = 0600, int* keep_fd = nullptr) {
    const std::string file = StrCat(prefix_, "1-", pid, "-", made_.size(), "0123456789abcdef");
    const int fd = ::shm_open(("/" + file).c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    EXPECT_GE(fd, 0) << std::strerror(errno);
    if (fd < 0) return file;
    made_.push_back(file);
    EXPECT_EQ(::ftruncate(fd, sizeof(shm::SegmentHeader)), 0);
    if (header_pid != 0) {
      uint8_t head[sizeof(shm::SegmentHeader)] = {};
      const uint64_t magic = shm::kSegmentMagic;
      const int32_t owner = header_pid;
      std::memcpy(head + offsetof(shm::SegmentHeader, magic), &magic, sizeof(magic));
      std::memcpy(head + offsetof(shm::SegmentHeader, owner_pid), &owner, sizeof(owner));
      EXPECT_EQ(::pwrite(fd, head, sizeof(head), 0), static_cast<ssize_t>(sizeof(head)));
    }
    EXPECT_EQ(::fchmod(fd, mode), 0);
    if (keep_fd != nullptr) {
      *keep_fd = fd;
    } else {
      ::close(fd);
    }
    return file;
  }

  // A sweep of this test's files only, `age` after now.
  int Sweep(system_clock::duration age) {
    shm::OrphanSweep sweep;
    sweep.now = system_clock::now() + age;
    sweep.file_prefix = prefix_;
    return shm::SweepOrphanedSegments(sweep);
  }

  static bool Exists(const std::string& file) { return ::access(("/dev/shm/" + file).c_str(), F_OK) == 0; }

  std::string prefix_;
  std::vector<std::string> made_;
};

TEST_F(OrphanSweepTest, OldSegmentOfADeadCreatorIsRemoved) {
  const pid_t dead = DeadPid();
  const std::string with_header = MakeSegment(dead, dead);
  const std::string without_header = MakeSegment(dead, 0);  // the creator died before writing it
  EXPECT_EQ(Sweep(shm::kOrphanMinAge + minutes(1)), 2);
  EXPECT_FALSE(Exists(with_header));
  EXPECT_FALSE(Exists(without_header));
}

TEST_F(OrphanSweepTest, YoungSegmentOfADeadCreatorIsKept) {
  const pid_t dead = DeadPid();
  const std::string file = MakeSegment(dead, dead);
  EXPECT_EQ(Sweep(minutes(0)), 0);
  EXPECT_EQ(Sweep(shm::kOrphanMinAge - minutes(1)), 0);
  EXPECT_TRUE(Exists(file));
  EXPECT_EQ(Sweep(shm::kOrphanMinAge + minutes(1)), 1);
}

TEST_F(OrphanSweepTest, SegmentOfALiveCreatorIsKept) {
  const std::string file = MakeSegment(::getpid(), ::getpid());
  EXPECT_EQ(Sweep(minutes(600)), 0);
  EXPECT_TRUE(Exists(file));
}

// A live creator in another pid namespace: its pid means nothing here, but
// its lock does.
TEST_F(OrphanSweepTest, LockedSegmentIsKeptWhateverItsPid) {
  const pid_t dead = DeadPid();
  int fd = -1;
  const std::string file = MakeSegment(dead, dead, 0600, &fd);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  EXPECT_EQ(Sweep(minutes(600)), 0);
  EXPECT_TRUE(Exists(file));
  ::close(fd);  // what the kernel does when the creator dies
  EXPECT_EQ(Sweep(minutes(600)), 1);
  EXPECT_FALSE(Exists(file));
}

// A reused pid in the name, or a header that is not the name's creator's.
TEST_F(OrphanSweepTest, HeaderNamingAnotherCreatorIsKept) {
  const std::string file = MakeSegment(DeadPid(), ::getpid() + 1000000);
  EXPECT_EQ(Sweep(minutes(600)), 0);
  EXPECT_TRUE(Exists(file));
}

TEST_F(OrphanSweepTest, ForeignUnreadableAndUnparsableFilesAreSkipped) {
  const pid_t dead = DeadPid();
  const std::string unreadable = MakeSegment(dead, dead, 0000);
  const std::string shared = MakeSegment(dead, dead, 0644);  // not as Create makes it
  std::string foreign;
  if (::geteuid() == 0) {  // only root can make a file of another user
    foreign = MakeSegment(dead, dead);
    ASSERT_EQ(::chown(("/dev/shm/" + foreign).c_str(), 65534, 65534), 0);
  }
  const std::string unparsable = prefix_ + "no-pid-here";
  const int fd = ::shm_open(("/" + unparsable).c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  made_.push_back(unparsable);
  ::close(fd);
  EXPECT_EQ(Sweep(minutes(600)), 0);
  for (const std::string& file : made_) EXPECT_TRUE(Exists(file)) << file;
}

// ShmSegment::Create holds the lock while the name exists, so even a
// segment whose name carries a dead pid survives every sweep.
TEST_F(OrphanSweepTest, SegmentOfALiveShmSegmentIsLocked) {
  const pid_t dead = DeadPid();
  std::unique_ptr<shm::ShmSegment> segment;
  ASSERT_TRUE(shm::ShmSegment::Create(StrCat("/", prefix_, "1-", dead, "-"), 1 << 16, &segment).ok());
  const std::string file = segment->name().substr(1);
  made_.push_back(file);
  EXPECT_EQ(Sweep(minutes(600)), 0);
  EXPECT_TRUE(Exists(file));
  segment->Unlink();
  EXPECT_FALSE(Exists(file));
}

// The sweep runs when a segment is created, with the real clock.
TEST_F(OrphanSweepTest, CreatingASegmentSweepsOldOrphans) {
  const pid_t dead = DeadPid();
  const std::string old_orphan = MakeSegment(dead, dead);
  const std::string young_orphan = MakeSegment(dead, dead);
  const auto long_ago = system_clock::to_time_t(system_clock::now() - shm::kOrphanMinAge - minutes(1));
  const timespec times[2] = {{long_ago, 0}, {long_ago, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, ("/dev/shm/" + old_orphan).c_str(), times, 0), 0);
  std::unique_ptr<shm::ShmSegment> segment;
  ASSERT_TRUE(shm::ShmSegment::Create(StrCat("/", prefix_, "2-", ::getpid(), "-"), 1 << 16, &segment).ok());
  EXPECT_FALSE(Exists(old_orphan));
  EXPECT_TRUE(Exists(young_orphan));
}

}  // namespace
}  // namespace chorus
