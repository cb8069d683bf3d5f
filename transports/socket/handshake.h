// Connection authentication: before anything else is read from a new
// connection, both ends prove they know the communicator's 128-bit secret.
//
//   acceptor  -> connector : nonce_a (16 random bytes)
//   connector -> acceptor  : hello (16) || nonce_c (16) || MAC('C' || nonce_a || hello || nonce_c)
//   acceptor  -> connector : MAC('A' || nonce_c || hello || nonce_a)
//
// MAC = SipHash-2-4-128 keyed with the secret. Fresh nonces defeat replay;
// the leading label keeps one direction's MAC from being reflected as the
// other's. The acceptor checks the MAC before looking at the hello.
#pragma once

#include <cstdint>
#include <string>

#include "base/deadline.h"
#include "base/status.h"
#include "transports/socket/socket.h"

namespace chorus {

enum class ConnectionPurpose : uint16_t {
  kRendezvous = 1,  // a rank joining the bootstrap root
  kTcpLane = 2,     // one socket ("lane") of the TCP transport
};

// What a connector says about itself, authenticated by the MAC.
struct Hello {
  ConnectionPurpose purpose = ConnectionPurpose::kRendezvous;
  int32_t rank = 0;
  int32_t lane = 0;
};

constexpr size_t kSecretBytes = 16;

// Acceptor side. Fails (the caller drops the connection) on a wrong MAC, a
// foreign protocol, or a purpose other than `expected`.
Status AcceptHandshake(const Socket& socket, const uint8_t secret[kSecretBytes], ConnectionPurpose expected,
                       Deadline deadline, Hello* hello);

// Connector side. Fails if the acceptor drops us (it thinks our secret is
// wrong) or cannot prove the secret itself.
Status ConnectHandshake(const Socket& socket, const uint8_t secret[kSecretBytes], const Hello& hello,
                        Deadline deadline);

// One WARN line on stderr for a dropped connection (no logger below src/).
void WarnDroppedConnection(const std::string& where, const Status& why);

}  // namespace chorus
