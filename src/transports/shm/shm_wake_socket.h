// The wake socket: how a shm rank that waits on several transports at once
// (core/transport_mux.h) is woken by its shared-memory peers. A futex
// cannot be waited on together with a TCP epoll set, so the owner of a
// segment binds a datagram socket in Linux's abstract namespace, named
// from its segment's random nonce, and sleeps in poll(2) on it with
// `sleeping` = kSleepingOnWakeSocket; whoever wakes it (shm_futex.h's
// WakeOwner) then also sends it one byte. Abstract names need no file
// and vanish with the socket; shared memory joins ranks of one network
// namespace only (transports/host_identity.h), where the name is visible.
#pragma once

#include "transports/shm/shm_layout.h"

namespace chorus {
namespace shm {

// `sleeping` of an owner asleep in poll on its wake socket (1: on its futex).
constexpr uint32_t kSleepingOnWakeSocket = 2;

// Binds the wake socket of the segment `header` (the caller's own, nonce
// set): a non-blocking datagram socket; -1 when the system refuses one.
int OpenWakeSocket(const SegmentHeader& header);
// Sends the owner of `header` one byte, without blocking; a full queue or
// a socket already gone is ignored (it is awake, or the wake is moot).
void SendWake(const SegmentHeader& header);
// Reads every byte queued on a wake socket.
void DrainWakeSocket(int fd);

}  // namespace shm
}  // namespace chorus
