// WaitingPeers: what a failed launch was still waiting for, kept in a fixed
// array (filled on error paths, read by the flight recorder).
#pragma once

#include <cstdint>

namespace chorus {

// What a failed launch was waiting for (filled by the executor and the
// board on failure): the peers it still expected data from or had not
// delivered to yet.
struct WaitingPeers {
  static constexpr int kMax = 8;
  int16_t recv_from[kMax];
  int16_t send_to[kMax];
  uint8_t nrecv = 0, nsend = 0;
  bool truncated = false;  // more peers than kMax

  void Clear() { nrecv = nsend = 0, truncated = false; }
  void AddRecv(int peer) {
    if (nrecv < kMax) recv_from[nrecv++] = static_cast<int16_t>(peer);
    else truncated = true;
  }
  void AddSend(int peer) {
    if (nsend < kMax) send_to[nsend++] = static_cast<int16_t>(peer);
    else truncated = true;
  }
};

}  // namespace chorus
