#include "transports/ibverbs/ib_connection_blob.h"

namespace chorus {
namespace ib {
namespace {

constexpr size_t kFixedBytes = 4 + 1 + 1 + 1 + 2 + 16 + 4 + 4 + 4 + 4;

void Put(std::string* out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

uint64_t Take(const std::string& in, size_t* at, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value |= static_cast<uint64_t>(static_cast<uint8_t>(in[*at + i])) << (8 * i);
  *at += bytes;
  return value;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

std::string ConnectionBlob::Encode() const {
  std::string raw;
  Put(&raw, kMagic, 4);
  Put(&raw, port, 1);
  Put(&raw, mtu, 1);
  Put(&raw, link_layer, 1);
  Put(&raw, lid, 2);
  raw.append(reinterpret_cast<const char*>(gid), 16);
  Put(&raw, psn, 4);
  Put(&raw, slot_bytes, 4);
  Put(&raw, slots, 4);
  Put(&raw, qpn.size(), 4);
  for (uint32_t number : qpn) Put(&raw, number, 4);
  static const char kDigits[] = "0123456789abcdef";
  std::string text;
  text.reserve(2 * raw.size());
  for (char c : raw) {
    text += kDigits[static_cast<uint8_t>(c) >> 4];
    text += kDigits[static_cast<uint8_t>(c) & 15];
  }
  return text;
}

Status ConnectionBlob::Decode(const std::string& text, ConnectionBlob* blob) {
  auto malformed = [&](const std::string& why) {
    return InvalidArgument("ibverbs transport: malformed connection address (", why, ")");
  };
  if (text.size() % 2 != 0) return malformed("odd number of hex digits");
  std::string raw(text.size() / 2, '\0');
  for (size_t i = 0; i < raw.size(); ++i) {
    const int high = HexValue(text[2 * i]), low = HexValue(text[2 * i + 1]);
    if (high < 0 || low < 0) return malformed("not hex");
    raw[i] = static_cast<char>(high << 4 | low);
  }
  if (raw.size() < kFixedBytes) return malformed(StrCat(raw.size(), " bytes"));
  size_t at = 0;
  if (Take(raw, &at, 4) != kMagic) return malformed("not an ibverbs address, or another version");
  ConnectionBlob decoded;
  decoded.port = static_cast<uint8_t>(Take(raw, &at, 1));
  decoded.mtu = static_cast<uint8_t>(Take(raw, &at, 1));
  decoded.link_layer = static_cast<uint8_t>(Take(raw, &at, 1));
  decoded.lid = static_cast<uint16_t>(Take(raw, &at, 2));
  for (int i = 0; i < 16; ++i) decoded.gid[i] = static_cast<uint8_t>(raw[at + i]);
  at += 16;
  decoded.psn = static_cast<uint32_t>(Take(raw, &at, 4));
  decoded.slot_bytes = static_cast<uint32_t>(Take(raw, &at, 4));
  decoded.slots = static_cast<uint32_t>(Take(raw, &at, 4));
  const uint64_t ranks = Take(raw, &at, 4);
  if (raw.size() - at != 4 * ranks) {
    return malformed(StrCat(ranks, " ranks announced, ", raw.size() - at, " bytes of QP numbers"));
  }
  if (decoded.psn >= (1u << 24)) return malformed("PSN over 24 bits");
  decoded.qpn.resize(ranks);
  for (uint64_t r = 0; r < ranks; ++r) decoded.qpn[r] = static_cast<uint32_t>(Take(raw, &at, 4));
  *blob = std::move(decoded);
  return Status::Ok();
}

}  // namespace ib
}  // namespace chorus
