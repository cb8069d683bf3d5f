#include "transports/shm/shm_names.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>

#include "base/log.h"
#include "base/siphash.h"
#include "base/status.h"
#include "transports/shm/shm_layout.h"

namespace chorus {
namespace shm {
namespace {

// glibc's shm_open keeps POSIX shared memory here.
constexpr char kShmDirectory[] = "/dev/shm";
constexpr char kFilePrefix[] = "chorus-shm-";

struct DirCloser {
  void operator()(DIR* dir) const { ::closedir(dir); }
};

class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() { ::close(fd_); }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;

 private:
  int fd_;
};

// The creator's pid in "chorus-shm-<tag>-<rank>-<pid>-<random>"; 0 if the
// name is not one of ours.
pid_t CreatorPid(const std::string& file) {
  if (file.compare(0, sizeof(kFilePrefix) - 1, kFilePrefix) != 0) return 0;
  const size_t rank_at = file.find('-', sizeof(kFilePrefix) - 1);
  if (rank_at == std::string::npos) return 0;
  const size_t pid_at = file.find('-', rank_at + 1);
  if (pid_at == std::string::npos) return 0;
  char* end = nullptr;
  const long pid = std::strtol(file.c_str() + pid_at + 1, &end, 10);
  return pid > 0 && *end == '-' ? static_cast<pid_t>(pid) : 0;
}

// Unlinks /dev/shm/<file> if it is certainly orphaned (shm_names.h): its
// creator `pid` is gone, nobody holds its lock, it is ours as Create made
// it, and it has not changed for `min_age` before `now`.
bool UnlinkIfOrphaned(const std::string& file, pid_t pid, std::chrono::system_clock::time_point now,
                      std::chrono::seconds min_age) {
  if (!ProcessGone(pid)) return false;
  const std::string path = StrCat(kShmDirectory, "/", file);
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;  // gone meanwhile, unreadable, a link
  FdCloser closer(fd);
  struct stat info = {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode) || info.st_uid != ::geteuid() ||
      (info.st_mode & 07777) != 0600) {
    return false;
  }
  // Never earlier than the creation (set-up never sets times back).
  if (now - std::chrono::system_clock::from_time_t(info.st_mtime) < min_age) return false;
  // The creator holds LOCK_EX while it lives (and the name exists).
  if (::flock(fd, LOCK_SH | LOCK_NB) != 0) return false;
  // A header in place must name the same creator.
  constexpr size_t kPidAt = offsetof(SegmentHeader, owner_pid);
  uint8_t head[kPidAt + sizeof(int32_t)];
  if (::pread(fd, head, sizeof(head), 0) == static_cast<ssize_t>(sizeof(head))) {
    uint64_t magic = 0;
    int32_t owner_pid = 0;
    std::memcpy(&magic, head + offsetof(SegmentHeader, magic), sizeof(magic));
    std::memcpy(&owner_pid, head + kPidAt, sizeof(owner_pid));
    if (magic == kSegmentMagic && owner_pid != pid) return false;
  }
  return ::shm_unlink(("/" + file).c_str()) == 0;
}

}  // namespace

std::string CommSegmentPrefix(const uint8_t secret[16]) {
  static const char kLabel[] = "chorus shm segment name";
  uint8_t tag[16];
  SipHash128(secret, reinterpret_cast<const uint8_t*>(kLabel), sizeof(kLabel) - 1, tag);
  static const char kHex[] = "0123456789abcdef";
  std::string prefix = "/chorus-shm-";
  for (int i = 0; i < 8; ++i) {  // 64 bits: enough to tell communicators apart
    prefix.push_back(kHex[tag[i] >> 4]);
    prefix.push_back(kHex[tag[i] & 15]);
  }
  return prefix + "-";
}

std::string SegmentPrefix(const uint8_t secret[16], int rank, pid_t pid) {
  return StrCat(CommSegmentPrefix(secret), rank, "-", pid, "-");
}

bool ProcessGone(pid_t pid) {
  if (::kill(pid, 0) != 0) return errno == ESRCH;
  std::ifstream stat(StrCat("/proc/", pid, "/stat"));
  std::string line;
  if (!std::getline(stat, line)) return false;
  const size_t paren = line.rfind(')');
  if (paren == std::string::npos || paren + 2 >= line.size()) return false;
  const char state = line[paren + 2];
  return state == 'Z' || state == 'X';
}

int UnlinkSegmentsOfDeadRanks(const uint8_t secret[16]) {
  const std::string prefix = CommSegmentPrefix(secret).substr(1);  // file names lack the '/'
  std::unique_ptr<DIR, DirCloser> dir(::opendir(kShmDirectory));
  if (dir == nullptr) return 0;
  const auto now = std::chrono::system_clock::now();
  int removed = 0;
  while (const dirent* entry = ::readdir(dir.get())) {
    const std::string file = entry->d_name;
    if (file.compare(0, prefix.size(), prefix) != 0) continue;
    const pid_t pid = CreatorPid(file);
    // No age: our communicator's set-up has failed, so its dead ranks'
    // segments will never be mapped; the lock still protects live creators.
    if (pid > 0 && UnlinkIfOrphaned(file, pid, now, std::chrono::seconds(0))) ++removed;
  }
  return removed;
}

int SweepOrphanedSegments(const OrphanSweep& sweep) {
  std::unique_ptr<DIR, DirCloser> dir(::opendir(kShmDirectory));
  if (dir == nullptr) return 0;
  int removed = 0;
  while (const dirent* entry = ::readdir(dir.get())) {
    const std::string file = entry->d_name;
    if (file.compare(0, sweep.file_prefix.size(), sweep.file_prefix) != 0) continue;
    const pid_t pid = CreatorPid(file);
    if (pid > 0 && UnlinkIfOrphaned(file, pid, sweep.now, sweep.min_age)) ++removed;
  }
  if (removed > 0) {
    CHORUS_INFO("INIT", "removed ", removed, " orphaned shared memory segment", removed == 1 ? "" : "s", " from ",
                kShmDirectory, " (creators gone, at least ", sweep.min_age.count(), " s old)");
  }
  return removed;
}

}  // namespace shm
}  // namespace chorus
