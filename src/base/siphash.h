// SipHash-2-4 (Aumasson & Bernstein), the keyed PRF behind connection
// authentication (a MAC over a nonce keyed with the communicator secret) and
// the unique-id checksum. Header-only: it is small and hot in neither path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace chorus {
namespace siphash_detail {

inline uint64_t Rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

inline uint64_t LoadLe64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

inline void StoreLe64(uint64_t v, uint8_t* p) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

struct State {
  uint64_t v0, v1, v2, v3;
  void Round() {
    v0 += v1;
    v1 = Rotl(v1, 13);
    v1 ^= v0;
    v0 = Rotl(v0, 32);
    v2 += v3;
    v3 = Rotl(v3, 16);
    v3 ^= v2;
    v0 += v3;
    v3 = Rotl(v3, 21);
    v3 ^= v0;
    v2 += v1;
    v1 = Rotl(v1, 17);
    v1 ^= v2;
    v2 = Rotl(v2, 32);
  }
  void Compress(uint64_t m) {
    v3 ^= m;
    Round();
    Round();
    v0 ^= m;
  }
  uint64_t Finalize(uint8_t marker) {
    v2 ^= marker;
    for (int i = 0; i < 4; ++i) Round();
    return v0 ^ v1 ^ v2 ^ v3;
  }
};

// Absorbs the whole message and its length byte; `wide` selects the 128-bit
// variant, which differs only in its initial v1 and finalisation markers.
inline State Absorb(const uint8_t key[16], const void* data, size_t size, bool wide) {
  const uint64_t k0 = LoadLe64(key), k1 = LoadLe64(key + 8);
  State s{k0 ^ 0x736f6d6570736575ULL, k1 ^ 0x646f72616e646f6dULL, k0 ^ 0x6c7967656e657261ULL,
          k1 ^ 0x7465646279746573ULL};
  if (wide) s.v1 ^= 0xee;
  const auto* in = static_cast<const uint8_t*>(data);
  const size_t full = size - size % 8;
  for (size_t i = 0; i < full; i += 8) s.Compress(LoadLe64(in + i));
  uint8_t tail[8] = {};
  if (size % 8 != 0) std::memcpy(tail, in + full, size % 8);
  tail[7] = static_cast<uint8_t>(size);
  s.Compress(LoadLe64(tail));
  return s;
}

}  // namespace siphash_detail

// SipHash-2-4 with a 64-bit output.
inline uint64_t SipHash64(const uint8_t key[16], const void* data, size_t size) {
  siphash_detail::State s = siphash_detail::Absorb(key, data, size, /*wide=*/false);
  return s.Finalize(0xff);
}

// SipHash-2-4 with a 128-bit output, written as 16 little-endian bytes (the
// byte order of the reference implementation's test vectors).
inline void SipHash128(const uint8_t key[16], const void* data, size_t size, uint8_t out[16]) {
  siphash_detail::State s = siphash_detail::Absorb(key, data, size, /*wide=*/true);
  siphash_detail::StoreLe64(s.Finalize(0xee), out);
  s.v1 ^= 0xdd;
  for (int i = 0; i < 4; ++i) s.Round();
  siphash_detail::StoreLe64(s.v0 ^ s.v1 ^ s.v2 ^ s.v3, out + 8);
}

}  // namespace chorus
