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

std::string EncodeRankAddress(const void* worker, size_t length, const CpuMask& cpus, const std::string& host) {
  static const char kDigits[] = "0123456789abcdef";
  const auto* bytes = static_cast<const unsigned char*>(worker);
  std::string text;
  text.reserve(2 * length + host.size() + 16);
  for (size_t i = 0; i < length; ++i) {
    text += kDigits[bytes[i] >> 4];
    text += kDigits[bytes[i] & 15];
  }
  return text + "@" + EncodeCpuMask(cpus) + "@" + host;
}

Status DecodeRankAddress(const std::string& text, RankAddress* address) {
  const size_t worker_end = text.find('@');
  const size_t mask_end = worker_end == std::string::npos ? std::string::npos : text.find('@', worker_end + 1);
  if (mask_end == std::string::npos) {
    return InvalidArgument("UCX transport: malformed address (no worker@cpus@host parts)");
  }
  if (worker_end == 0 || worker_end % 2 != 0) {
    return InvalidArgument("UCX transport: malformed worker address (", worker_end, " hex digits)");
  }
  std::vector<unsigned char> bytes(worker_end / 2);
  for (size_t i = 0; i < bytes.size(); ++i) {
    const int high = HexValue(text[2 * i]), low = HexValue(text[2 * i + 1]);
    if (high < 0 || low < 0) return InvalidArgument("UCX transport: malformed worker address (not hex)");
    bytes[i] = static_cast<unsigned char>(high << 4 | low);
  }
  CpuMask cpus;
  if (!DecodeCpuMask(text.substr(worker_end + 1, mask_end - worker_end - 1), &cpus)) {
    return InvalidArgument("UCX transport: malformed CPU mask in address");
  }
  address->worker = std::move(bytes);
  address->cpus = cpus;
  address->host = text.substr(mask_end + 1);
  return Status::Ok();
}

}  // namespace ucx
}  // namespace chorus
