// What a rank publishes at the rendezvous for the ibverbs transport (its
// Transport::LocalAddress()): how to reach each of its queue pairs (LID,
// GID, one QP number per rank, first PSN, path MTU) and the geometry of its
// receive rings, which both ends of a connection must share. The rings'
// addresses and keys follow over the connected queue pair itself (a hello
// message, ib_wire.h): they are allocated only for the peers routed to
// this transport, which the rendezvous does not know yet.
//
// Binary, little-endian, version-tagged, then hex so that it is printable.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace chorus {
namespace ib {

struct ConnectionBlob {
  static constexpr uint32_t kMagic = 0x31424943;  // "CIB1"
  uint8_t port = 1;
  uint8_t mtu = 0;         // enum ibv_mtu of the port's active MTU
  uint8_t link_layer = 0;  // IBV_LINK_LAYER_*
  uint16_t lid = 0;
  uint8_t gid[16] = {};
  uint32_t psn = 0;  // 24 bits: first packet sequence number of every QP
  uint32_t slot_bytes = 0;
  uint32_t slots = 0;
  std::vector<uint32_t> qpn;  // by rank; 0 for self

  std::string Encode() const;
  // Fails, naming what is wrong, on anything but a well-formed blob.
  static Status Decode(const std::string& text, ConnectionBlob* blob);
};

}  // namespace ib
}  // namespace chorus
