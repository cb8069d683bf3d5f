#include "bootstrap/heartbeat.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "base/log.h"
#include "base/siphash.h"
#include "bootstrap/rendezvous_protocol.h"

namespace chorus {
namespace {

using Clock = std::chrono::steady_clock;
using rendezvous::GetU32;
using rendezvous::GetU64;
using rendezvous::PutU32;
using rendezvous::PutU64;

constexpr uint32_t kMagic = 0x42484843;  // "CHHB"
constexpr uint32_t kBeat = 1;
constexpr uint32_t kGoodbye = 2;
// "I found rank <about> silent": the peers that hear it report the same
// rank, rather than the finder, whose connections close next.
constexpr uint32_t kSilentNotice = 3;
constexpr uint32_t kAboutNobody = 0xffffffff;
// A notice is sent this many times, before the finder's connections close.
constexpr int kNoticeCopies = 2;
constexpr size_t kHeaderBytes = 28;
constexpr size_t kDatagramBytes = kHeaderBytes + 16;
// A goodbye is sent this many times: UDP may drop one.
constexpr int kGoodbyeCopies = 3;

long long MillisSince(Clock::time_point then, Clock::time_point now) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(now - then).count();
}

}  // namespace

Status Heartbeat::Open(const std::string& interface_address, int rank, int nranks, const uint8_t secret[16],
                       int period_ms, std::unique_ptr<Heartbeat>* out) {
  if (period_ms <= 0) return InvalidArgument("heartbeat period ", period_ms, " ms must be positive");
  SocketAddress local;
  CHORUS_RETURN_IF_ERROR(ParseSocketAddress(interface_address, &local));
  local.set_port(0);
  const int fd = ::socket(local.family(), SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoError(errno, "heartbeat socket");
  if (::bind(fd, local.sockaddr_ptr(), local.length) != 0) {
    const int error = errno;
    ::close(fd);
    return ErrnoError(error, StrCat("binding the heartbeat socket to ", local.ToString()));
  }
  SocketAddress bound;
  bound.length = sizeof(bound.storage);
  if (::getsockname(fd, bound.sockaddr_ptr(), &bound.length) != 0) {
    const int error = errno;
    ::close(fd);
    return ErrnoError(error, "getsockname of the heartbeat socket");
  }
  out->reset(new Heartbeat(fd, rank, nranks, secret, period_ms, bound.ToString()));
  return Status::Ok();
}

Heartbeat::Heartbeat(int fd, int rank, int nranks, const uint8_t secret[16], int period_ms, std::string address)
    : fd_(fd), rank_(rank), nranks_(nranks), period_ms_(period_ms), address_(std::move(address)) {
  std::memcpy(secret_, secret, sizeof(secret_));
}

Heartbeat::~Heartbeat() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    if (::write(wake_fd_, &one, sizeof(one)) < 0) {
      CHORUS_WARN("NET", "waking the heartbeat thread: ", ErrnoError(errno, "write").message());
    }
    thread_.join();
    for (int copy = 0; copy < kGoodbyeCopies; ++copy) SendToAll(kGoodbye, kAboutNobody);
  }
  if (wake_fd_ >= 0) ::close(wake_fd_);
  ::close(fd_);
}

Status Heartbeat::Start(const std::vector<std::string>& addresses, std::function<void(const Status&)> on_silent) {
  if (static_cast<int>(addresses.size()) != nranks_) {
    return InvalidArgument("heartbeat: ", addresses.size(), " addresses for ", nranks_, " ranks");
  }
  peers_.assign(nranks_, SocketAddress());
  for (int r = 0; r < nranks_; ++r) {
    if (r != rank_) CHORUS_RETURN_IF_ERROR(ParseSocketAddress(addresses[r], &peers_[r]));
  }
  last_heard_.assign(nranks_, Clock::now());  // every peer gets kSilentPeriods from now
  last_sequence_.assign(nranks_, 0);
  gone_.assign(nranks_, false);
  on_silent_ = std::move(on_silent);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) return ErrnoError(errno, "eventfd for the heartbeat");
  try {
    thread_ = std::thread([this] { Run(); });
  } catch (const std::system_error& error) {
    return SystemError("starting the heartbeat thread: ", error.what());
  }
  return Status::Ok();
}

void Heartbeat::Run() {
  Clock::time_point next_beat = Clock::now();
  while (true) {
    Clock::time_point now = Clock::now();
    if (now >= next_beat) {
      SendToAll(kBeat, kAboutNobody);
      next_beat = now + std::chrono::milliseconds(period_ms_);
    }
    CheckSilence(now);
    pollfd entries[2] = {{wake_fd_, POLLIN, 0}, {fd_, POLLIN, 0}};
    const int wait_ms = static_cast<int>(std::max<long long>(0, MillisSince(now, next_beat)));
    if (::poll(entries, 2, wait_ms) < 0 && errno != EINTR) {
      CHORUS_WARN("NET", "rank ", rank_, ": the heartbeat stops: ", ErrnoError(errno, "poll").message());
      return;
    }
    if (entries[0].revents != 0) return;
    if (entries[1].revents != 0) Receive(Clock::now());
  }
}

void Heartbeat::SendToAll(uint32_t kind, uint32_t about) {
  uint8_t datagram[kDatagramBytes];
  PutU32(datagram, kMagic);
  PutU32(datagram + 4, kind);
  PutU32(datagram + 8, static_cast<uint32_t>(rank_));
  PutU32(datagram + 12, static_cast<uint32_t>(nranks_));
  PutU32(datagram + 16, about);
  PutU64(datagram + 20, ++sequence_);
  SipHash128(secret_, datagram, kHeaderBytes, datagram + kHeaderBytes);
  for (int r = 0; r < nranks_; ++r) {
    if (r == rank_) continue;
    // Best effort: a full buffer or an unreachable peer loses one beat.
    (void)::sendto(fd_, datagram, sizeof(datagram), MSG_DONTWAIT | MSG_NOSIGNAL, peers_[r].sockaddr_ptr(),
                   peers_[r].length);
  }
}

void Heartbeat::Receive(Clock::time_point now) {
  uint8_t datagram[kDatagramBytes + 1];
  while (true) {
    const ssize_t n = ::recv(fd_, datagram, sizeof(datagram), MSG_DONTWAIT);
    if (n < 0) return;  // drained (or an ICMP error queued by a gone peer)
    if (static_cast<size_t>(n) != kDatagramBytes || GetU32(datagram) != kMagic) continue;
    const uint32_t kind = GetU32(datagram + 4);
    const uint32_t sender = GetU32(datagram + 8);
    const uint32_t about = GetU32(datagram + 16);
    if ((kind != kBeat && kind != kGoodbye && kind != kSilentNotice) || sender >= static_cast<uint32_t>(nranks_) ||
        static_cast<int>(sender) == rank_ || GetU32(datagram + 12) != static_cast<uint32_t>(nranks_)) {
      continue;
    }
    if (kind == kSilentNotice && (about >= static_cast<uint32_t>(nranks_) || about == sender)) continue;
    uint8_t mac[16];
    SipHash128(secret_, datagram, kHeaderBytes, mac);
    if (std::memcmp(mac, datagram + kHeaderBytes, sizeof(mac)) != 0) continue;
    const uint64_t sequence = GetU64(datagram + 20);
    if (sequence <= last_sequence_[sender]) continue;  // a replay or a late copy
    last_sequence_[sender] = sequence;
    last_heard_[sender] = now;
    if (kind == kGoodbye) gone_[sender] = true;
    if (kind == kSilentNotice && !reported_) {
      Report(static_cast<int>(about),
             TimeoutError("rank ", rank_, ": rank ", about, " sent no heartbeat for ", Heartbeat::kSilentPeriods,
                          " periods (CHORUS_HEARTBEAT_MS=", period_ms_, "), as rank ", sender,
                          " found: its process is stopped, hung or cut off"));
    }
  }
}

void Heartbeat::CheckSilence(Clock::time_point now) {
  if (reported_) return;
  const long long limit_ms = static_cast<long long>(kSilentPeriods) * period_ms_;
  for (int r = 0; r < nranks_; ++r) {
    if (r == rank_ || gone_[r]) continue;
    const long long silent_ms = MillisSince(last_heard_[r], now);
    if (silent_ms <= limit_ms) continue;
    Report(r, TimeoutError("rank ", rank_, ": rank ", r, " sent no heartbeat for ", silent_ms,
                           " ms (CHORUS_HEARTBEAT_MS=", period_ms_, "): its process is stopped, hung or cut off "
                           "from this one"));
    return;
  }
}

void Heartbeat::Report(int silent, const Status& why) {
  reported_ = true;
  // First the notice, then the callback: it closes this rank's connections,
  // which the peers would otherwise blame on this rank.
  for (int copy = 0; copy < kNoticeCopies; ++copy) SendToAll(kSilentNotice, static_cast<uint32_t>(silent));
  on_silent_(why);
}

}  // namespace chorus
