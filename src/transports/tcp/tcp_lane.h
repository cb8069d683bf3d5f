// TcpLane: one socket of a TCP peer connection with its two FIFO queues of
// posted requests. Driven by TcpTransport with edge-triggered epoll: the lane
// remembers whether its socket may be readable/writable and moves bytes
// until the kernel says EAGAIN or its queue is empty.
//
// Wake-ups: a large receive would otherwise wake the progress thread for
// every few segments that arrive (about a dozen times per 430 KB at
// 1 Gbit/s). Once a message's header is in and checked, the lane raises the
// socket's SO_RCVLOWAT to what is left of the payload (at most
// kMaxReceiveBatch), so epoll reports it readable once that much is there.
// Small messages keep the default of 1 byte: their latency is untouched.
// On a socket whose SO_RCVBUF was fixed (CHORUS_SOCKET_RCVBUF) the batch is
// at most half of the payload the buffer holds (a quarter of what getsockopt
// reports: the kernel doubles the set size for bookkeeping), so a wake-up
// never waits for more than the window lets in and the next batch arrives
// while this one is copied out. (The kernel's own cap, tcp_set_rcvlowat, is
// sk_rcvbuf / 2: twice ours.)
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "transports/socket/socket.h"
#include "transports/tcp/wire_header.h"
#include "transports/transport.h"

namespace chorus {

class TcpLane {
 public:
  // `peer_label` names the peer in errors: "peer 3 (10.0.0.4:5000)".
  // `fixed_receive_buffer`: the socket's SO_RCVBUF as getsockopt reports it
  // when the application set it; 0 when the kernel autotunes it.
  TcpLane(Socket socket, std::string peer_label, int fixed_receive_buffer = 0);

  int fd() const { return socket_.fd(); }
  Status GetSocketBuffers(SocketBuffers* buffers) const { return socket_.GetBuffers(buffers); }
  // The most one wake-up waits for (SO_RCVLOWAT), never more than what the
  // socket's receive buffer holds.
  size_t max_receive_batch() const { return max_receive_batch_; }
  void ShutdownSocket() { socket_.ShutdownBoth(); }

  void PushSend(TransferRequest* request) { Push(request, &send_head_, &send_tail_); }
  void PushRecv(TransferRequest* request) { Push(request, &recv_head_, &recv_tail_); }
  bool idle() const { return send_head_ == nullptr && recv_head_ == nullptr; }

  // Writes a close notice (wire_header.h) if no message is half sent on this
  // lane, without blocking; true when it went out whole.
  bool SendNotice(const WireHeader& notice);
  // A close notice the peer sent here: one a receive read in place of a
  // header, or one waiting in the socket behind at most kMaxNoticeLookahead
  // bytes of messages (looked at, not consumed).
  bool FindNotice(WireHeader* notice);

  // Records what epoll reported (EPOLLIN/OUT/RDHUP/HUP/ERR).
  void OnEvents(uint32_t events);

  // Moves as many bytes as the socket takes without blocking; sets
  // *progressed when any byte moved. Fails when the peer closed or reset the
  // connection while a request is pending on this lane, or on a header that
  // does not match the posted receive.
  Status Progress(bool* progressed);

 private:
  static void Push(TransferRequest* request, TransferRequest** head, TransferRequest** tail);
  static TransferRequest* Pop(TransferRequest** head, TransferRequest** tail);
  Status ProgressSends(bool* progressed);
  Status ProgressRecvs(bool* progressed);
  Status CheckHeader(const TransferRequest& request) const;
  // Called when a receive is waiting for bytes that have not arrived.
  void SetReceiveLowWatermark(size_t bytes_wanted);
  Status IoError(int err, const char* what) const;

  Socket socket_;
  std::string peer_label_;
  TransferRequest* send_head_ = nullptr;
  TransferRequest* send_tail_ = nullptr;
  TransferRequest* recv_head_ = nullptr;
  TransferRequest* recv_tail_ = nullptr;
  WireHeader send_header_ = {};  // header of send_head_, built when it starts
  WireHeader recv_header_ = {};  // header of recv_head_, as it arrives
  size_t recv_header_bytes_ = 0;
  // Edge-triggered readiness: true until a call returns EAGAIN.
  bool readable_ = true;
  bool writable_ = true;
  bool peer_hung_up_ = false;      // EPOLLRDHUP/HUP/ERR seen
  bool notice_received_ = false;   // recv_header_ is a close notice
  int receive_low_watermark_ = 1;  // the socket's SO_RCVLOWAT
  size_t max_receive_batch_;       // kMaxReceiveBatch, or less for a fixed SO_RCVBUF
};

// How far past unread messages FindNotice looks for a close notice.
constexpr size_t kMaxNoticeLookahead = 4 << 20;

// Receives with at least this much payload left wait for it in one wake-up.
constexpr size_t kMinReceiveBatch = 64 * 1024;
// The most one wake-up waits for: the copy out of the socket then overlaps
// the next batch's arrival (the kernel also caps it at half the buffer).
constexpr size_t kMaxReceiveBatch = 256 * 1024;

// The batch cap of a lane whose socket reports SO_RCVBUF `fixed_receive_buffer`
// (0: autotuned): min(kMaxReceiveBatch, fixed_receive_buffer / 4), at least 1.
size_t MaxReceiveBatch(int fixed_receive_buffer);

}  // namespace chorus
