#include "transports/shm/shm_names.h"

#include <dirent.h>
#include <signal.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <memory>

#include "base/siphash.h"
#include "base/status.h"

namespace chorus {
namespace shm {
namespace {

// glibc's shm_open keeps POSIX shared memory here.
constexpr char kShmDirectory[] = "/dev/shm";

struct DirCloser {
  void operator()(DIR* dir) const { ::closedir(dir); }
};

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
  int removed = 0;
  while (const dirent* entry = ::readdir(dir.get())) {
    const std::string file = entry->d_name;
    if (file.compare(0, prefix.size(), prefix) != 0) continue;
    // "<rank>-<pid>-<random>" follows the prefix.
    const size_t pid_at = file.find('-', prefix.size());
    if (pid_at == std::string::npos) continue;
    char* end = nullptr;
    const long pid = std::strtol(file.c_str() + pid_at + 1, &end, 10);
    if (pid <= 0 || *end != '-' || !ProcessGone(static_cast<pid_t>(pid))) continue;
    if (::shm_unlink(("/" + file).c_str()) == 0) ++removed;
  }
  return removed;
}

}  // namespace shm
}  // namespace chorus
