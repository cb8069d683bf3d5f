#include "core/peer_info.h"

#include <cstdint>
#include <cstring>

namespace chorus {
namespace {

void PutField(std::string* out, const std::string& field) {
  uint32_t length = static_cast<uint32_t>(field.size());
  out->append(reinterpret_cast<const char*>(&length), sizeof(length));
  *out += field;
}

bool GetField(const std::string& blob, size_t* pos, std::string* field) {
  uint32_t length = 0;
  if (blob.size() - *pos < sizeof(length)) return false;
  std::memcpy(&length, blob.data() + *pos, sizeof(length));
  *pos += sizeof(length);
  if (blob.size() - *pos < length) return false;
  field->assign(blob, *pos, length);
  *pos += length;
  return true;
}

constexpr char kMagic[] = "CHPI1";

}  // namespace

std::string PeerInfo::Encode() const {
  std::string out(kMagic);
  PutField(&out, host);
  PutField(&out, tcp_address);
  PutField(&out, shm_address);
  return out;
}

Status PeerInfo::Decode(const std::string& blob, PeerInfo* out) {
  size_t pos = sizeof(kMagic) - 1;
  PeerInfo info;
  if (blob.compare(0, pos, kMagic) != 0 || !GetField(blob, &pos, &info.host) ||
      !GetField(blob, &pos, &info.tcp_address) || !GetField(blob, &pos, &info.shm_address) || pos != blob.size()) {
    return InternalError("malformed peer information at the rendezvous (a rank of another Chorus version?)");
  }
  *out = std::move(info);
  return Status::Ok();
}

}  // namespace chorus
