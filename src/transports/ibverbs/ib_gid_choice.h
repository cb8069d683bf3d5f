// Which GID of a port a queue pair addresses its peer by. InfiniBand ports
// route by LID and use GID 0; on RoCE the GID is the address, and a RoCE v2
// GID holding an IPv4 address (::ffff:a.b.c.d) is what routes over an IPv4
// network (NCCL's default too). CHORUS_IB_GID_INDEX overrides the choice.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace chorus {
namespace ib {

enum class GidType { kInfiniBand, kRoceV1, kRoceV2 };

struct GidEntry {
  int index = 0;
  uint8_t gid[16] = {};
  GidType type = GidType::kInfiniBand;
};

// An all-zero GID marks an unused table entry.
bool GidIsEmpty(const uint8_t gid[16]);
// ::ffff:a.b.c.d
bool GidIsIpv4(const uint8_t gid[16]);
// "fe80:0000:...": for messages.
std::string GidText(const uint8_t gid[16]);

// `configured` >= 0: that index, which must be in `table` and not empty.
// -1 (automatic): the first RoCE v2 GID with an IPv4 address, else index 0.
Status ChooseGidIndex(const std::vector<GidEntry>& table, int configured, int* index);

}  // namespace ib
}  // namespace chorus
