// A float's bit pattern and back, for tests that compare results bit for bit
// (NaN payloads, -0, subnormals).
#pragma once

#include <cstdint>
#include <cstring>

namespace chorus::testing {

inline uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

inline float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

}  // namespace chorus::testing
