// The original one-element-at-a-time codecs of the compressed allreduce
// (src/lossy/compression_codecs.cc before the bit-sliced rewrite): the
// reference that vote_codecs_test and perf/kernels/vote_benchmark compare
// the library's codecs with. Written for clarity, not speed.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace chorus::reference {

inline bool VotesPlus(float x) { return !(x < 0.0f); }
inline float SignOf(int sum) { return sum > 0 ? 1.0f : (sum < 0 ? -1.0f : 0.0f); }
inline bool SignBit(const uint8_t* bits, size_t i) { return (bits[i / 8] >> (i % 8)) & 1u; }

inline void PackSignBits(const float* x, size_t count, uint8_t* bits) {
  if (count == 0) return;  // bits may be NULL
  std::memset(bits, 0, count / 8 + (count % 8 != 0));
  for (size_t i = 0; i < count; ++i) bits[i / 8] |= static_cast<uint8_t>(VotesPlus(x[i]) << (i % 8));
}

inline void SignVoteFromBits(const uint8_t* all_bits, size_t stride, int nranks, size_t count, float* out) {
  for (size_t i = 0; i < count; ++i) {
    int sum = 0;
    for (int r = 0; r < nranks; ++r) sum += SignBit(all_bits + static_cast<size_t>(r) * stride, i) ? 1 : -1;
    out[i] = SignOf(sum);
  }
}

inline void SignOfSums(const int8_t* sums, size_t count, float* out) {
  for (size_t i = 0; i < count; ++i) out[i] = SignOf(sums[i]);
}

inline void QuantizeInt8L1(const float* x, size_t count, int nranks, int8_t* q) {
  double l1 = 0;
  for (size_t i = 0; i < count; ++i) l1 += std::fabs(static_cast<double>(x[i]));
  const double mean = count > 0 ? l1 / static_cast<double>(count) : 0.0;
  const int levels = 127 / nranks;
  if (!(mean > 0) || !std::isfinite(mean)) {
    if (count > 0) std::memset(q, 0, count);  // q may be NULL at count 0
    return;
  }
  const double factor = levels / 2.0 / mean;
  for (size_t i = 0; i < count; ++i) {
    const double scaled = std::round(static_cast<double>(x[i]) * factor);
    const double clipped = scaled > levels ? levels : (scaled < -levels ? -levels : scaled);
    q[i] = std::isnan(clipped) ? 0 : static_cast<int8_t>(clipped);
  }
}

inline void EncodeOneBit(const float* x, float* residual, size_t count, uint8_t* record) {
  double l1 = 0;
  for (size_t i = 0; i < count; ++i) l1 += std::fabs(static_cast<double>(x[i] + residual[i]));
  const float scale = count > 0 ? static_cast<float>(l1 / static_cast<double>(count)) : 0.0f;
  std::memcpy(record, &scale, sizeof(scale));
  uint8_t* bits = record + sizeof(scale);
  if (count > 0) std::memset(bits, 0, count / 8 + (count % 8 != 0));
  for (size_t i = 0; i < count; ++i) {
    const float y = x[i] + residual[i];
    const bool plus = VotesPlus(y);
    bits[i / 8] |= static_cast<uint8_t>(plus << (i % 8));
    residual[i] = y - (plus ? scale : -scale);
  }
}

inline void DecodeOneBitMean(const uint8_t* records, size_t record_bytes, int nranks, size_t count, float* out) {
  for (size_t i = 0; i < count; ++i) {
    double sum = 0;
    for (int r = 0; r < nranks; ++r) {
      const uint8_t* record = records + static_cast<size_t>(r) * record_bytes;
      float scale;
      std::memcpy(&scale, record, sizeof(scale));
      sum += SignBit(record + sizeof(scale), i) ? scale : -static_cast<double>(scale);
    }
    out[i] = static_cast<float>(sum / nranks);
  }
}

}  // namespace chorus::reference
