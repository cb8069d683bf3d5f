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

constexpr char kMagic[] = "CHPI2";

}  // namespace

std::string PeerInfo::Encode() const {
  std::string out(kMagic);
  PutField(&out, host);
  const uint32_t count = static_cast<uint32_t>(addresses.size());
  out.append(reinterpret_cast<const char*>(&count), sizeof(count));
  for (const PublishedAddress& published : addresses) {
    PutField(&out, published.transport);
    PutField(&out, published.address);
  }
  return out;
}

Status PeerInfo::Decode(const std::string& blob, PeerInfo* out) {
  const Status malformed =
      InternalError("malformed peer information at the rendezvous (a rank of another Chorus version?)");
  size_t pos = sizeof(kMagic) - 1;
  PeerInfo info;
  uint32_t count = 0;
  if (blob.compare(0, pos, kMagic) != 0 || !GetField(blob, &pos, &info.host) || blob.size() - pos < sizeof(count)) {
    return malformed;
  }
  std::memcpy(&count, blob.data() + pos, sizeof(count));
  pos += sizeof(count);
  if (count > kMaxPublishedAddresses) return malformed;
  for (uint32_t i = 0; i < count; ++i) {
    PublishedAddress published;
    if (!GetField(blob, &pos, &published.transport) || !GetField(blob, &pos, &published.address) ||
        published.transport.empty()) {
      return malformed;
    }
    info.addresses.push_back(std::move(published));
  }
  if (pos != blob.size()) return malformed;
  *out = std::move(info);
  return Status::Ok();
}

}  // namespace chorus
