// Reads IDX files (the MNIST format), gzip-compressed or plain, through
// zlib's gzread. Only unsigned-byte data (type 0x08) is supported: that is
// what MNIST and Fashion-MNIST use.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace trainer {

struct IdxArray {
  std::vector<uint32_t> dims;  // e.g. {60000, 28, 28} for images, {60000} for labels
  std::vector<uint8_t> values;
};

// Errors name the file and what is wrong with it (missing, truncated, bad
// magic, absurd dimensions).
chorus::Status ReadIdxFile(const std::string& path, IdxArray* out);

}  // namespace trainer
