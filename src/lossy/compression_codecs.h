// Per-rank encoders and decoders of the compressed allreduce modes
// (docs/lossy.md). Pure functions over float32, so each rule is testable on
// its own. A vote is -1 when x < 0, +1 otherwise (0, -0 and NaN vote +1).
#pragma once

#include <cstddef>
#include <cstdint>

namespace chorus {

// bits[i/8] bit (i%8) = 1 when x[i] votes +1. Writes PackedBitBytes(count).
void PackSignBits(const float* x, size_t count, uint8_t* bits);
inline bool SignBit(const uint8_t* bits, size_t i) { return (bits[i / 8] >> (i % 8)) & 1u; }

// out[i] = sign(sum over ranks of their votes): -1, 0 (a tie) or +1. Rank r's
// bits start at all_bits + r * stride.
// Counts 64 elements' votes at a time (bit-sliced), AVX2 for the output
// where the CPU has it and CHORUS_KERNELS allows vector kernels.
void SignVoteFromBits(const uint8_t* all_bits, size_t stride, int nranks, size_t count, float* out);
// The same without vector instructions (tests compare the two).
void SignVoteFromBitsPortable(const uint8_t* all_bits, size_t stride, int nranks, size_t count, float* out);

// votes[i] = -1 or +1 (for an int8 Sum allreduce of vote counts).
void SignVotes(const float* x, size_t count, int8_t* votes);
// out[i] = sign(sums[i]) as -1, 0 or +1.
void SignOfSums(const int8_t* sums, size_t count, float* out);

// Lion Cub's L1-scaled quantizer: s = floor(127 / nranks),
// q = clip(round(x / mean|x| * s / 2), -s, s), rounding half away from zero;
// all zeros when mean|x| is 0 or not finite, 0 for a NaN element. An int8
// sum of nranks such vectors cannot overflow: |sum| <= nranks * s <= 127.
int Int8Levels(int nranks);
void QuantizeInt8L1(const float* x, size_t count, int nranks, int8_t* q);

// 1-bit with error feedback. Record = float scale, then packed sign bits.
inline size_t OneBitRecordBytes(size_t count) { return sizeof(float) + count / 8 + (count % 8 != 0); }
// y = x + e; scale = ||y||_1 / count (summed in double, rounded to float);
// sign = vote of y; e <- y - scale * sign (in float). Writes the record.
void EncodeOneBit(const float* x, float* residual, size_t count, uint8_t* record);
// out[i] = (1 / nranks) * sum_r scale_r * sign_r[i], summed in rank order in
// double, rounded once to float (identical on every rank).
void DecodeOneBitMean(const uint8_t* records, size_t record_bytes, int nranks, size_t count, float* out);

}  // namespace chorus
