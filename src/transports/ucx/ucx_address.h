// A UCP worker address as printable text for the rendezvous (hex), and back.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "base/status.h"

namespace chorus {
namespace ucx {

std::string EncodeWorkerAddress(const void* address, size_t length);
// Fails on odd length or a non-hex digit (a corrupt or foreign address).
Status DecodeWorkerAddress(const std::string& text, std::vector<unsigned char>* address);

}  // namespace ucx
}  // namespace chorus
