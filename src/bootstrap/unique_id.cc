// The 128-byte chorusUniqueId, little-endian:
//   [0,4) magic "CHID"  [4] version  [5] address length  [6,8) zero
//   [8,24) secret  [24,120) root address, zero padded  [120,128) checksum
// The checksum (SipHash-64 under a fixed key) catches ids mangled in
// transit; it is not a secret, the secret inside the id is.
#include <cstring>

#include "base/siphash.h"
#include "bootstrap/bootstrap.h"
#include "transports/socket/socket_address.h"

namespace chorus {
namespace {

constexpr uint8_t kMagic[4] = {'C', 'H', 'I', 'D'};
constexpr uint8_t kVersion = 1;
constexpr size_t kSecretOffset = 8;
constexpr size_t kAddressOffset = 24;
constexpr size_t kChecksumOffset = 120;
constexpr size_t kMaxAddressBytes = kChecksumOffset - kAddressOffset;
constexpr uint8_t kChecksumKey[16] = {'c', 'h', 'o', 'r', 'u', 's', '-', 'u', 'n', 'i', 'q', 'u', 'e', '-', 'i', 'd'};
static_assert(CHORUS_UNIQUE_ID_BYTES == kChecksumOffset + 8, "unique id layout");

uint64_t Checksum(const uint8_t* bytes) { return SipHash64(kChecksumKey, bytes, kChecksumOffset); }

}  // namespace

Status EncodeUniqueId(const UniqueIdContents& contents, chorusUniqueId* id) {
  if (id == nullptr) return InvalidArgument("unique id: null output");
  const std::string& address = contents.root_address;
  if (address.empty() || address.size() > kMaxAddressBytes) {
    return InvalidArgument("unique id: root address '", address, "' must have 1 to ", kMaxAddressBytes, " characters");
  }
  uint8_t bytes[CHORUS_UNIQUE_ID_BYTES] = {};
  std::memcpy(bytes, kMagic, sizeof(kMagic));
  bytes[4] = kVersion;
  bytes[5] = static_cast<uint8_t>(address.size());
  std::memcpy(bytes + kSecretOffset, contents.secret, sizeof(contents.secret));
  std::memcpy(bytes + kAddressOffset, address.data(), address.size());
  const uint64_t checksum = Checksum(bytes);
  for (int i = 0; i < 8; ++i) bytes[kChecksumOffset + i] = static_cast<uint8_t>(checksum >> (8 * i));
  std::memcpy(id->internal, bytes, sizeof(bytes));
  return Status::Ok();
}

Status DecodeUniqueId(const chorusUniqueId& id, UniqueIdContents* contents) {
  uint8_t bytes[CHORUS_UNIQUE_ID_BYTES];
  std::memcpy(bytes, id.internal, sizeof(bytes));
  if (std::memcmp(bytes, kMagic, sizeof(kMagic)) != 0) {
    return InvalidArgument(
        "not a Chorus unique id (bad magic): pass the id made by "
        "chorusGetUniqueId unchanged to every rank");
  }
  if (bytes[4] != kVersion) {
    return InvalidArgument("unique id has version ", int(bytes[4]), ", this library reads version ", int(kVersion),
                           " (mixed Chorus versions?)");
  }
  uint64_t stored = 0;
  for (int i = 7; i >= 0; --i) stored = (stored << 8) | bytes[kChecksumOffset + i];
  if (stored != Checksum(bytes)) {
    return InvalidArgument("corrupt unique id (checksum mismatch): it was changed in transit");
  }
  const size_t length = bytes[5];
  if (length == 0 || length > kMaxAddressBytes) {
    return InvalidArgument("corrupt unique id: root address length ", length);
  }
  // Reserved bytes and the padding after the address are zero in every id
  // EncodeUniqueId makes: anything else is not an id this library wrote,
  // even under a matching checksum (which is not a secret).
  for (size_t i = 6; i < kSecretOffset; ++i) {
    if (bytes[i] != 0) return InvalidArgument("corrupt unique id: reserved byte ", i, " is not zero");
  }
  for (size_t i = kAddressOffset + length; i < kChecksumOffset; ++i) {
    if (bytes[i] != 0) return InvalidArgument("corrupt unique id: byte ", i, " after the root address is not zero");
  }
  std::string address(reinterpret_cast<const char*>(bytes + kAddressOffset), length);
  std::string host;
  uint16_t port = 0;
  CHORUS_RETURN_IF_ERROR(SplitHostPort(address, &host, &port).WithContext("corrupt unique id"));
  contents->root_address = std::move(address);
  std::memcpy(contents->secret, bytes + kSecretOffset, sizeof(contents->secret));
  return Status::Ok();
}

}  // namespace chorus
