#include "transports/shm/shm_segment.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "base/siphash.h"
#include "transports/shm/shm_names.h"
#include "transports/socket/socket.h"

namespace chorus {
namespace shm {
namespace {

// Owns a file descriptor for the duration of set-up.
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ >= 0) ::close(fd_);
  }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;
  int Release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

Status RandomSuffix(std::string* name) {
  uint8_t random[16];
  CHORUS_RETURN_IF_ERROR(FillRandom(random, sizeof(random)));
  static const char kHex[] = "0123456789abcdef";
  for (uint8_t byte : random) {
    name->push_back(kHex[byte >> 4]);
    name->push_back(kHex[byte & 15]);
  }
  return Status::Ok();
}

// Backs every page now. tmpfs lets ftruncate grow a file past its free
// space and then kills the first touch of a missing page with SIGBUS; an
// allocation that fails here is an error the caller can report.
Status Reserve(int fd, size_t bytes, const std::string& name) {
  int error = 0;
  do {
    error = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  } while (error == EINTR);
  if (error == EOPNOTSUPP) {
    // A filesystem that cannot preallocate (not tmpfs): size it only.
    if (::ftruncate(fd, static_cast<off_t>(bytes)) == 0) return Status::Ok();
    error = errno;
  }
  if (error == 0) return Status::Ok();
  if (error == ENOSPC || error == EFBIG || error == ENOMEM) {
    struct statvfs space = {};
    const bool known = ::fstatvfs(fd, &space) == 0 && space.f_blocks > 0;
    const uint64_t block = known ? space.f_frsize : 0;
    return SystemError("shared memory segment ", name, " needs ", bytes, " bytes but ",
                       DescribeShortage(bytes, known, space.f_bavail * block, space.f_blocks * block), " (",
                       std::strerror(error), ")");
  }
  return ErrnoError(error, StrCat("reserving ", bytes, " bytes of shared memory ", name));
}

Status Map(int fd, size_t bytes, const std::string& name, void** data) {
  void* mapped = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (mapped == MAP_FAILED) return ErrnoError(errno, StrCat("mmap of shared memory ", name));
  *data = mapped;
  return Status::Ok();
}

}  // namespace

std::string DescribeShortage(size_t needed, bool known, uint64_t free_bytes, uint64_t total_bytes) {
  if (!known) return "/dev/shm has no room";
  if (free_bytes < needed) return StrCat("/dev/shm has ", free_bytes, " bytes free (of ", total_bytes, ")");
  // Read after the failure: processes creating or removing segments at the
  // same time (the other ranks of this job) changed it in between.
  return StrCat("/dev/shm ran out; it had ", free_bytes, " bytes free (of ", total_bytes,
                ") just after, as other processes were creating or removing segments at the same time");
}

ShmSegment::ShmSegment(std::string name, void* data, size_t size, bool linked, int lock_fd)
    : name_(std::move(name)), data_(data), size_(size), linked_(linked), lock_fd_(lock_fd) {}

ShmSegment::~ShmSegment() {
  Unlink();
  ::munmap(data_, size_);
}

Status ShmSegment::Create(const std::string& prefix, size_t bytes, std::unique_ptr<ShmSegment>* out) {
  // Before reserving: what dead jobs left behind may be what /dev/shm lacks.
  SweepOrphanedSegments();
  std::string name = prefix;
  CHORUS_RETURN_IF_ERROR(RandomSuffix(&name));
  const int fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoError(errno, StrCat("shm_open(", name, ")"));
  FdCloser closer(fd);
  // Cannot fail on a fresh file; if it did, only the age protects it (shm_names.h).
  (void)::flock(fd, LOCK_EX | LOCK_NB);
  void* data = nullptr;
  Status status = Reserve(fd, bytes, name);
  if (status.ok()) status = Map(fd, bytes, name, &data);
  if (!status.ok()) {
    ::shm_unlink(name.c_str());
    return status;
  }
  out->reset(new ShmSegment(std::move(name), data, bytes, /*linked=*/true, closer.Release()));
  return Status::Ok();
}

Status ShmSegment::Open(const std::string& name, size_t expected_bytes, std::unique_ptr<ShmSegment>* out) {
  const int fd = ::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) return ErrnoError(errno, StrCat("shm_open(", name, ")"));
  FdCloser closer(fd);
  struct stat info = {};
  if (::fstat(fd, &info) != 0) return ErrnoError(errno, StrCat("fstat of shared memory ", name));
  if (static_cast<size_t>(info.st_size) != expected_bytes) {
    return InvalidUsage("shared memory ", name, " has ", info.st_size, " bytes, expected ", expected_bytes);
  }
  void* data = nullptr;
  CHORUS_RETURN_IF_ERROR(Map(fd, expected_bytes, name, &data));
  out->reset(new ShmSegment(name, data, expected_bytes, /*linked=*/false, /*lock_fd=*/-1));
  return Status::Ok();
}

void ShmSegment::Unlink() {
  if (!linked_.exchange(false)) return;
  ::shm_unlink(name_.c_str());
  ::close(lock_fd_);  // releases the lock: nothing is left to protect
}

void SegmentMac(const uint8_t secret[16], const char* label, const uint8_t nonce[16], int32_t rank, uint8_t out[16]) {
  uint8_t message[64] = {};
  const size_t label_bytes = std::strlen(label);
  std::memcpy(message, label, label_bytes);
  std::memcpy(message + label_bytes, nonce, 16);
  std::memcpy(message + label_bytes + 16, &rank, sizeof(rank));
  SipHash128(secret, message, label_bytes + 16 + sizeof(rank), out);
}

}  // namespace shm
}  // namespace chorus
