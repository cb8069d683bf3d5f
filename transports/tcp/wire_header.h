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

}  // namespace chorus
