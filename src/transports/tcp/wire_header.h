// The fixed header in front of every TCP message. The receiver checks it
// against its posted request before reading a byte of payload. Fields are in
// host byte order (a mixed-endian job would fail the magic check, loudly).
#pragma once

#include <cstdint>

namespace chorus {

struct WireHeader {
  uint32_t magic;
  uint32_t reserved;  // zero; room for flags without changing the size
  uint64_t tag;
  uint64_t bytes;
};
static_assert(sizeof(WireHeader) == 24, "WireHeader must have no padding");

constexpr uint32_t kWireMagic = 0x4d524843;  // "CHRM" in memory on little-endian hosts
// A close notice (transport.h) in place of a message header: tag = reason,
// bytes = origin rank. Sent only between messages, then the socket closes.
constexpr uint32_t kNoticeMagic = 0x4e524843;  // "CHRN"

}  // namespace chorus
