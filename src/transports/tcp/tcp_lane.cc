#include "transports/tcp/tcp_lane.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace chorus {

size_t MaxReceiveBatch(int fixed_receive_buffer) {
  if (fixed_receive_buffer <= 0) return kMaxReceiveBatch;
  return std::max<size_t>(1, std::min(kMaxReceiveBatch, static_cast<size_t>(fixed_receive_buffer) / 4));
}

TcpLane::TcpLane(Socket socket, std::string peer_label, int fixed_receive_buffer)
    : socket_(std::move(socket)),
      peer_label_(std::move(peer_label)),
      max_receive_batch_(MaxReceiveBatch(fixed_receive_buffer)) {}

void TcpLane::Push(TransferRequest* request, TransferRequest** head, TransferRequest** tail) {
  request->next = nullptr;
  if (*tail != nullptr) {
    (*tail)->next = request;
  } else {
    *head = request;
  }
  *tail = request;
}

TransferRequest* TcpLane::Pop(TransferRequest** head, TransferRequest** tail) {
  TransferRequest* request = *head;
  *head = request->next;
  if (*head == nullptr) *tail = nullptr;
  request->next = nullptr;
  return request;
}

void TcpLane::OnEvents(uint32_t events) {
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) readable_ = true;
  if (events & (EPOLLOUT | EPOLLHUP | EPOLLERR)) writable_ = true;
  if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) peer_hung_up_ = true;
}

bool TcpLane::SendNotice(const WireHeader& notice) {
  if (send_head_ != nullptr && send_head_->progress != 0) return false;
  return ::send(fd(), &notice, sizeof(notice), MSG_DONTWAIT | MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof(notice));
}

bool TcpLane::FindNotice(WireHeader* notice) {
  if (notice_received_) {
    *notice = recv_header_;
    return true;
  }
  constexpr size_t kHeader = sizeof(WireHeader);
  // Unread payload of the message being received; a half-read header
  // leaves no boundary to look from.
  size_t skip = 0;
  if (recv_header_bytes_ == kHeader && recv_head_ != nullptr) {
    skip = recv_head_->bytes - recv_head_->progress;
  } else if (recv_header_bytes_ != 0) {
    return false;
  }
  // The messages the peer sent before its notice are readable too: look
  // past them without consuming anything (each MSG_PEEK starts at the front
  // of the queue). The bytes skipped land, one slice after another, in one
  // small scratch buffer, so that looking allocates nothing (a peer that
  // ends first hangs up during our warm calls). Cold path otherwise.
  constexpr size_t kScratchBytes = 64 << 10;
  static_assert(kMaxNoticeLookahead / kScratchBytes + 2 <= 1024, "within IOV_MAX");
  char scratch[kScratchBytes];
  iovec slices[kMaxNoticeLookahead / kScratchBytes + 2];
  while (skip + kHeader <= kMaxNoticeLookahead) {
    WireHeader next;
    size_t count = 0;
    for (size_t done = 0; done < skip; done += kScratchBytes) {
      slices[count++] = {scratch, std::min(kScratchBytes, skip - done)};
    }
    slices[count++] = {&next, kHeader};
    msghdr message = {};
    message.msg_iov = slices;
    message.msg_iovlen = count;
    const ssize_t got = ::recvmsg(fd(), &message, MSG_PEEK | MSG_DONTWAIT);
    if (got != static_cast<ssize_t>(skip + kHeader)) return false;
    if (next.magic == kNoticeMagic) {
      *notice = next;
      return true;
    }
    if (next.magic != kWireMagic || next.bytes > kMaxNoticeLookahead) return false;
    skip += kHeader + next.bytes;
  }
  return false;
}

Status TcpLane::Progress(bool* progressed) {
  CHORUS_RETURN_IF_ERROR(ProgressSends(progressed));
  return ProgressRecvs(progressed);
}

Status TcpLane::IoError(int err, const char* what) const {
  if (err == EPIPE) return RemoteError(peer_label_, " closed the connection");
  if (err == ECONNRESET) return RemoteError(peer_label_, " reset the connection");
  return ErrnoError(err, StrCat(what, " ", peer_label_));
}

Status TcpLane::ProgressSends(bool* progressed) {
  // A peer that hung up will never read what we queue for it: fail now
  // instead of filling the socket buffer and waiting for the deadline.
  if (send_head_ != nullptr && peer_hung_up_) {
    return RemoteError(peer_label_, " closed the connection");
  }
  while (send_head_ != nullptr && writable_) {
    TransferRequest* request = send_head_;
    constexpr size_t kHeader = sizeof(WireHeader);
    if (request->progress == 0) send_header_ = {kWireMagic, 0, request->tag, request->bytes};
    iovec parts[2];
    int count = 0;
    if (request->progress < kHeader) {
      parts[count++] = {reinterpret_cast<char*>(&send_header_) + request->progress, kHeader - request->progress};
      if (request->bytes > 0) parts[count++] = {request->buffer, request->bytes};
    } else {
      const size_t done = request->progress - kHeader;
      parts[count++] = {static_cast<char*>(request->buffer) + done, request->bytes - done};
    }
    msghdr message = {};
    message.msg_iov = parts;
    message.msg_iovlen = count;
    const ssize_t sent = ::sendmsg(fd(), &message, MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        writable_ = false;
        break;
      }
      return IoError(errno, "sending to");
    }
    *progressed = true;
    request->progress += static_cast<size_t>(sent);
    if (request->progress == kHeader + request->bytes) Pop(&send_head_, &send_tail_)->done = true;
  }
  return Status::Ok();
}

Status TcpLane::CheckHeader(const TransferRequest& request) const {
  if (recv_header_.magic != kWireMagic) {
    return InternalError("bad message header from ", peer_label_, " (magic 0x", std::hex, recv_header_.magic,
                         "): the stream is corrupt");
  }
  if (recv_header_.tag != request.tag || recv_header_.bytes != request.bytes) {
    return InternalError("message mismatch with ", peer_label_, ": expected tag ", request.tag, " with ", request.bytes,
                         " bytes, received tag ", recv_header_.tag, " with ", recv_header_.bytes,
                         " bytes (did the ranks call different operations?)");
  }
  return Status::Ok();
}

void TcpLane::SetReceiveLowWatermark(size_t bytes_wanted) {
  const int wanted =
      bytes_wanted >= kMinReceiveBatch ? static_cast<int>(std::min(bytes_wanted, max_receive_batch_)) : 1;
  if (wanted == receive_low_watermark_) return;
  // The kernel re-checks readiness when it is set, so bytes that arrived
  // since our EAGAIN still raise an event. On failure we keep the old value:
  // it costs wake-ups, never correctness (every wanted byte will arrive).
  if (::setsockopt(fd(), SOL_SOCKET, SO_RCVLOWAT, &wanted, sizeof(wanted)) == 0) receive_low_watermark_ = wanted;
}

Status TcpLane::ProgressRecvs(bool* progressed) {
  constexpr size_t kHeader = sizeof(WireHeader);
  while (recv_head_ != nullptr && readable_) {
    TransferRequest* request = recv_head_;
    char* into;
    size_t wanted;
    if (recv_header_bytes_ < kHeader) {
      into = reinterpret_cast<char*>(&recv_header_) + recv_header_bytes_;
      wanted = kHeader - recv_header_bytes_;
    } else {
      into = static_cast<char*>(request->buffer) + request->progress;
      wanted = request->bytes - request->progress;
    }
    if (wanted > 0) {
      const ssize_t got = ::recv(fd(), into, wanted, 0);
      if (got == 0) return RemoteError(peer_label_, " closed the connection");
      if (got < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
          readable_ = false;
          // Only a checked header may raise the watermark: a mismatched
          // sender might never send the bytes we would wait for.
          SetReceiveLowWatermark(recv_header_bytes_ == kHeader ? wanted : 0);
          break;
        }
        return IoError(errno, "receiving from");
      }
      *progressed = true;
      if (recv_header_bytes_ < kHeader) {
        recv_header_bytes_ += static_cast<size_t>(got);
        if (recv_header_bytes_ == kHeader && recv_header_.magic == kNoticeMagic) {
          notice_received_ = true;
          return RemoteError(peer_label_, " closed the connection with a notice from rank ", recv_header_.bytes);
        }
        if (recv_header_bytes_ == kHeader) CHORUS_RETURN_IF_ERROR(CheckHeader(*request));
        if (recv_header_bytes_ < kHeader || request->bytes > 0) continue;
      } else {
        request->progress += static_cast<size_t>(got);
      }
    }
    if (recv_header_bytes_ == kHeader && request->progress == request->bytes) {
      Pop(&recv_head_, &recv_tail_)->done = true;
      recv_header_bytes_ = 0;
      *progressed = true;
    }
  }
  return Status::Ok();
}

}  // namespace chorus
