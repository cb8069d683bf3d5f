// What a UCX rank publishes through the rendezvous, as printable text: its
// UCP worker's address (hex), its CPU affinity and its host identity, so
// that ranks on one host decide alike whether they share cores
// (transports/cpu_sharing.h). "<worker hex>@<cpu mask>@<host identity>".
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "base/status.h"
#include "transports/cpu_sharing.h"

namespace chorus {
namespace ucx {

struct RankAddress {
  std::vector<unsigned char> worker;
  CpuMask cpus;
  std::string host;
};

std::string EncodeRankAddress(const void* worker, size_t length, const CpuMask& cpus, const std::string& host);
// Fails on a missing part, a worker address of odd length or with a non-hex
// digit, or a malformed mask (a corrupt or foreign address).
Status DecodeRankAddress(const std::string& text, RankAddress* address);

}  // namespace ucx
}  // namespace chorus
