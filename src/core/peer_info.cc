#include "core/peer_info.h"

#include <cstdint>
#include <cstdlib>
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

constexpr char kMagic[] = "CHPI3";  // CHPI2 had no NUMA node

bool ParseNumaNode(const std::string& text, int* out) {
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || value < -1 || value > (1 << 20)) return false;
  // Only the form Encode writes ("+3", "03", " 3" are malformed), so that a
  // blob that decodes re-encodes to itself.
  if (std::to_string(value) != text) return false;
  *out = static_cast<int>(value);
  return true;
}

}  // namespace

std::string PeerInfo::Encode() const {
  std::string out(kMagic);
  PutField(&out, host);
  PutField(&out, std::to_string(numa_node));
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
  std::string numa;
  uint32_t count = 0;
  if (blob.compare(0, pos, kMagic) != 0 || !GetField(blob, &pos, &info.host) || !GetField(blob, &pos, &numa) ||
      !ParseNumaNode(numa, &info.numa_node) || blob.size() - pos < sizeof(count)) {
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
