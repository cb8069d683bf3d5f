#include "transports/ucx/ucx_address.h"

namespace chorus {
namespace ucx {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

std::string EncodeWorkerAddress(const void* address, size_t length) {
  static const char kDigits[] = "0123456789abcdef";
  const auto* bytes = static_cast<const unsigned char*>(address);
  std::string text;
  text.reserve(2 * length);
  for (size_t i = 0; i < length; ++i) {
    text += kDigits[bytes[i] >> 4];
    text += kDigits[bytes[i] & 15];
  }
  return text;
}

Status DecodeWorkerAddress(const std::string& text, std::vector<unsigned char>* address) {
  if (text.empty() || text.size() % 2 != 0) {
    return InvalidArgument("UCX transport: malformed worker address (", text.size(), " hex digits)");
  }
  std::vector<unsigned char> bytes(text.size() / 2);
  for (size_t i = 0; i < bytes.size(); ++i) {
    const int high = HexValue(text[2 * i]), low = HexValue(text[2 * i + 1]);
    if (high < 0 || low < 0) return InvalidArgument("UCX transport: malformed worker address (not hex)");
    bytes[i] = static_cast<unsigned char>(high << 4 | low);
  }
  *address = std::move(bytes);
  return Status::Ok();
}

}  // namespace ucx
}  // namespace chorus
