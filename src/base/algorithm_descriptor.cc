#include "base/algorithm_descriptor.h"

#include <cctype>

namespace chorus {

const char* AlgorithmName(Algorithm algo) {
  const AlgorithmDescriptor* descriptor = FindAlgorithmDescriptor(algo);
  return descriptor != nullptr ? descriptor->name : "unknown";
}

bool Supports(Algorithm algo, Collective coll) {
  const AlgorithmDescriptor* descriptor = FindAlgorithmDescriptor(algo);
  return descriptor != nullptr && static_cast<size_t>(coll) < kCollectiveCount &&
         (descriptor->collectives & CollectiveBit(coll)) != 0;
}

std::string NormalizeName(std::string_view text) {
  auto blank = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!text.empty() && blank(text.front())) text.remove_prefix(1);
  while (!text.empty() && blank(text.back())) text.remove_suffix(1);
  std::string out;
  for (char c : text) {
    if (c == '_' || c == '-') continue;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

bool ParseAlgorithmName(std::string_view text, Algorithm* algo) {
  const std::string name = NormalizeName(text);
  for (const AlgorithmDescriptor& descriptor : kAlgorithmDescriptors) {
    if (name == NormalizeName(descriptor.name)) {
      *algo = descriptor.id;
      return true;
    }
  }
  return false;
}

std::string AlgorithmNameList(bool with_auto, const char* last_joiner) {
  std::string out;
  for (const AlgorithmDescriptor& descriptor : kAlgorithmDescriptors) {
    if (descriptor.id == Algorithm::kAuto && !with_auto) continue;
    if (!out.empty()) out += &descriptor == &kAlgorithmDescriptors[kAlgorithmCount - 1] ? last_joiner : ", ";
    out += descriptor.name;
  }
  return out;
}

}  // namespace chorus
