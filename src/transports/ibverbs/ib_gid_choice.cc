#include "transports/ibverbs/ib_gid_choice.h"

#include <cstdio>

namespace chorus {
namespace ib {

bool GidIsEmpty(const uint8_t gid[16]) {
  for (int i = 0; i < 16; ++i) {
    if (gid[i] != 0) return false;
  }
  return true;
}

bool GidIsIpv4(const uint8_t gid[16]) {
  for (int i = 0; i < 10; ++i) {
    if (gid[i] != 0) return false;
  }
  return gid[10] == 0xff && gid[11] == 0xff;
}

std::string GidText(const uint8_t gid[16]) {
  // Eight "xxxx:" groups of 5 characters, each written with its own terminator
  // (41 bytes in all); the last colon is then cut.
  char text[41];
  for (int i = 0; i < 8; ++i) std::snprintf(text + 5 * i, 6, "%02x%02x:", gid[2 * i], gid[2 * i + 1]);
  text[39] = '\0';
  return text;
}

Status ChooseGidIndex(const std::vector<GidEntry>& table, int configured, int* index) {
  if (configured >= 0) {
    for (const GidEntry& entry : table) {
      if (entry.index == configured) {
        if (GidIsEmpty(entry.gid)) return InvalidArgument("CHORUS_IB_GID_INDEX=", configured, ": that GID is empty");
        *index = configured;
        return Status::Ok();
      }
    }
    return InvalidArgument("CHORUS_IB_GID_INDEX=", configured, ": the port's GID table has ", table.size(),
                           " entries");
  }
  for (const GidEntry& entry : table) {
    if (entry.type == GidType::kRoceV2 && GidIsIpv4(entry.gid)) {
      *index = entry.index;
      return Status::Ok();
    }
  }
  *index = 0;
  return Status::Ok();
}

}  // namespace ib
}  // namespace chorus
