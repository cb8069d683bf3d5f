#include "transports/ibverbs/ib_hca_list.h"

namespace chorus {
namespace ib {

Status HcaFilter::Parse(const std::string& text, HcaFilter* filter) {
  HcaFilter parsed;
  size_t begin = 0;
  if (begin < text.size() && text[begin] == '^') {
    parsed.exclude_ = true;
    ++begin;
  }
  if (begin < text.size() && text[begin] == '=') {
    parsed.exact_ = true;
    ++begin;
  }
  auto invalid = [&](const std::string& why) {
    return InvalidArgument("CHORUS_IB_HCA='", text, "': ", why,
                           " (expected a list such as 'mlx5_0:1,mlx5_1', '^mlx5_2' or '=mlx5_0')");
  };
  if (begin == text.size()) {
    if (begin != 0) return invalid("no device after '^' or '='");
    *filter = parsed;
    return Status::Ok();
  }
  while (true) {
    const size_t comma = text.find(',', begin);
    const std::string item = text.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
    if (item.empty()) return invalid("empty entry");
    Entry entry;
    const size_t colon = item.find(':');
    entry.device = item.substr(0, colon);
    if (entry.device.empty()) return invalid("empty device name");
    if (colon != std::string::npos) {
      const std::string port = item.substr(colon + 1);
      if (port.empty() || port.size() > 3 || port.find_first_not_of("0123456789") != std::string::npos ||
          std::stoi(port) < 1 || std::stoi(port) > 255) {
        return invalid(StrCat("port '", port, "' of ", entry.device, " is not a number in 1..255"));
      }
      entry.port = std::stoi(port);
    }
    parsed.entries_.push_back(entry);
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  *filter = parsed;
  return Status::Ok();
}

bool HcaFilter::Matches(const Entry& entry, const std::string& device, int port) const {
  const bool name_matches = exact_ ? device == entry.device : device.compare(0, entry.device.size(), entry.device) == 0;
  return name_matches && (entry.port < 0 || entry.port == port);
}

bool HcaFilter::Allows(const std::string& device, int port) const {
  if (entries_.empty()) return true;
  bool listed = false;
  for (const Entry& entry : entries_) listed = listed || Matches(entry, device, port);
  return exclude_ ? !listed : listed;
}

}  // namespace ib
}  // namespace chorus
