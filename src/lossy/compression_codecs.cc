#include "lossy/compression_codecs.h"

#include <cmath>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define CHORUS_VOTE_AVX2 1
#endif

#include "kernels/kernel_table.h"

namespace chorus {
namespace {

bool VotesPlus(float x) { return !(x < 0.0f); }

// Packed sign bits are handled 64 at a time: bit j of a word is element j of
// that word's 64 (byte j/8, bit j%8), whatever the host's byte order.
constexpr size_t kWordBits = 64;

uint64_t LoadBitWord(const uint8_t* bytes, size_t nbytes) {
  uint64_t word = 0;
  std::memcpy(&word, bytes, nbytes);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  word = __builtin_bswap64(word);
#endif
  return word;
}

// Bit j of the byte = !(x[j] < 0) for the first `n` (<= 8) elements.
uint8_t PackSignByte(const float* x, size_t n) {
  unsigned byte = 0;
  for (size_t j = 0; j < n; ++j) byte |= static_cast<unsigned>(VotesPlus(x[j])) << j;
  return static_cast<uint8_t>(byte);
}

uint8_t PackSignByte8(const float* x) {
  unsigned byte = 0;
  for (int j = 0; j < 8; ++j) byte |= static_cast<unsigned>(VotesPlus(x[j])) << j;
  return static_cast<uint8_t>(byte);
}

// Row n holds bit j of n as 0.0f or 1.0f: four elements' votes per lookup.
struct NibbleFloats {
  float row[16][4];
};
constexpr NibbleFloats MakeNibbleFloats() {
  NibbleFloats table{};
  for (int n = 0; n < 16; ++n) {
    for (int j = 0; j < 4; ++j) table.row[n][j] = static_cast<float>((n >> j) & 1);
  }
  return table;
}
constexpr NibbleFloats kNibbleFloats = MakeNibbleFloats();

// out[j] = +1 where `plus` has bit j, -1 where `minus` has it, else +0
// (1 - 0, 0 - 1, 0 - 0: exact).
void WriteSigns(uint64_t plus, uint64_t minus, size_t n, float* out) {
  size_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const float* p = kNibbleFloats.row[(plus >> j) & 0xfu];
    const float* m = kNibbleFloats.row[(minus >> j) & 0xfu];
    for (int k = 0; k < 4; ++k) out[j + k] = p[k] - m[k];
  }
  for (; j < n; ++j) out[j] = static_cast<float>((plus >> j) & 1u) - static_cast<float>((minus >> j) & 1u);
}

#ifdef CHORUS_VOTE_AVX2
// WriteSigns for a full word with AVX2: 8 elements per store. Only called
// when the CPU has AVX2 (the library itself is built for baseline x86-64).
__attribute__((target("avx2"))) void WriteSigns64Avx2(uint64_t plus, uint64_t minus, float* out) {
  const __m256i lane_bits = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  const __m256 one = _mm256_set1_ps(1.0f), minus_one = _mm256_set1_ps(-1.0f);
  for (int j = 0; j < 64; j += 8) {
    const __m256i p = _mm256_and_si256(_mm256_set1_epi32(static_cast<int>((plus >> j) & 0xffu)), lane_bits);
    const __m256i m = _mm256_and_si256(_mm256_set1_epi32(static_cast<int>((minus >> j) & 0xffu)), lane_bits);
    // plus and minus are disjoint: +1.0f, -1.0f or +0.0f, as WriteSigns.
    const __m256 p_mask = _mm256_castsi256_ps(_mm256_cmpeq_epi32(p, lane_bits));
    const __m256 m_mask = _mm256_castsi256_ps(_mm256_cmpeq_epi32(m, lane_bits));
    _mm256_storeu_ps(out + j, _mm256_or_ps(_mm256_and_ps(p_mask, one), _mm256_and_ps(m_mask, minus_one)));
  }
}
#endif

#ifdef CHORUS_VOTE_AVX2
// PackSignBits for 8 * nbytes elements: !(x < 0) is the unordered
// not-less-than comparison (true for NaN, -0 and 0), one byte per mask.
__attribute__((target("avx2"))) void PackSignBytesAvx2(const float* x, size_t nbytes, uint8_t* bits) {
  const __m256 zero = _mm256_setzero_ps();
  for (size_t b = 0; b < nbytes; ++b) {
    const __m256 plus = _mm256_cmp_ps(_mm256_loadu_ps(x + 8 * b), zero, _CMP_NLT_UQ);
    bits[b] = static_cast<uint8_t>(_mm256_movemask_ps(plus));
  }
}
#endif

// A vertical (bit-sliced) counter of 64 lanes: plane k holds bit k of every
// lane's count, so one add of 64 votes costs a few word operations per plane.
class VoteCounter {
 public:
  // Enough planes to count to `nranks`.
  explicit VoteCounter(int nranks) {
    while (num_planes_ < kMaxPlanes && (uint64_t{1} << num_planes_) <= static_cast<uint64_t>(nranks)) ++num_planes_;
  }

  void Clear() { std::memset(planes_, 0, sizeof(planes_)); }

  // Adds 1 to every lane whose bit is set (ripple carry through the planes).
  void Add(uint64_t votes) {
    for (int k = 0; k < num_planes_; ++k) {
      const uint64_t carry = planes_[k] & votes;
      planes_[k] ^= votes;
      votes = carry;
    }
  }

  // Lanes whose count is greater than, and equal to, `threshold`
  // (< 2^num_planes): a comparison from the top plane down.
  void Compare(uint64_t threshold, uint64_t* greater, uint64_t* equal) const {
    uint64_t gt = 0, eq = ~uint64_t{0};
    for (int k = num_planes_ - 1; k >= 0; --k) {
      if ((threshold >> k) & 1u) {
        eq &= planes_[k];
      } else {
        gt |= eq & planes_[k];
        eq &= ~planes_[k];
      }
    }
    *greater = gt;
    *equal = eq;
  }

 private:
  static constexpr int kMaxPlanes = 32;  // nranks is an int
  uint64_t planes_[kMaxPlanes] = {};
  int num_planes_ = 0;
};

// With c = number of +1 votes of p, the sum of votes is 2c - p: +1 when
// c > floor(p/2), 0 when p is even and c == p/2, else -1.
void SignVote(const uint8_t* all_bits, size_t stride, int nranks, size_t count, float* out, bool avx2) {
  const size_t packed_bytes = count / 8 + (count % 8 != 0);
  const uint64_t half = static_cast<uint64_t>(nranks) / 2;
  const bool ties_possible = nranks % 2 == 0;
  VoteCounter counter(nranks);
  for (size_t first = 0; first < count; first += kWordBits) {
    const size_t byte = first / 8;
    const size_t nbytes = packed_bytes - byte < 8 ? packed_bytes - byte : 8;
    counter.Clear();
    for (int r = 0; r < nranks; ++r) counter.Add(LoadBitWord(all_bits + static_cast<size_t>(r) * stride + byte, nbytes));
    uint64_t greater, equal;
    counter.Compare(half, &greater, &equal);
    const uint64_t minus = ties_possible ? ~(greater | equal) : ~greater;
    const size_t n = count - first < kWordBits ? count - first : kWordBits;
#ifdef CHORUS_VOTE_AVX2
    if (avx2 && n == kWordBits) {
      WriteSigns64Avx2(greater, minus, out + first);
      continue;
    }
#else
    (void)avx2;
#endif
    WriteSigns(greater, minus, n, out + first);
  }
}

// AVX2 when the CPU has it and CHORUS_KERNELS has not asked for the portable
// kernels (the vote follows the reduction kernels' choice).
bool UseAvx2() {
#ifdef CHORUS_VOTE_AVX2
  return &kernels::ActiveKernels() != &kernels::PortableKernels() && __builtin_cpu_supports("avx2");
#else
  return false;
#endif
}

}  // namespace

void PackSignBits(const float* x, size_t count, uint8_t* bits) {
  const size_t full = count / 8;
#ifdef CHORUS_VOTE_AVX2
  if (UseAvx2()) {
    PackSignBytesAvx2(x, full, bits);
  } else {
    for (size_t b = 0; b < full; ++b) bits[b] = PackSignByte8(x + 8 * b);
  }
#else
  for (size_t b = 0; b < full; ++b) bits[b] = PackSignByte8(x + 8 * b);
#endif
  if (count % 8 != 0) bits[full] = PackSignByte(x + 8 * full, count % 8);
}

void SignVoteFromBits(const uint8_t* all_bits, size_t stride, int nranks, size_t count, float* out) {
  SignVote(all_bits, stride, nranks, count, out, UseAvx2());
}

void SignVoteFromBitsPortable(const uint8_t* all_bits, size_t stride, int nranks, size_t count, float* out) {
  SignVote(all_bits, stride, nranks, count, out, false);
}

void SignVotes(const float* x, size_t count, int8_t* votes) {
  for (size_t i = 0; i < count; ++i) votes[i] = static_cast<int8_t>(VotesPlus(x[i]) ? 1 : -1);
}

void SignOfSums(const int8_t* sums, size_t count, float* out) {
  for (size_t i = 0; i < count; ++i) out[i] = static_cast<float>(sums[i] > 0) - static_cast<float>(sums[i] < 0);
}
int Int8Levels(int nranks) { return 127 / nranks; }

void QuantizeInt8L1(const float* x, size_t count, int nranks, int8_t* q) {
  if (count == 0) return;  // the buffers may be NULL (memset(NULL, 0, 0) is undefined)
  double l1 = 0;
  for (size_t i = 0; i < count; ++i) l1 += std::fabs(static_cast<double>(x[i]));
  const double mean = count > 0 ? l1 / static_cast<double>(count) : 0.0;
  const int levels = Int8Levels(nranks);
  if (!(mean > 0) || !std::isfinite(mean)) {
    std::memset(q, 0, count);
    return;
  }
  const double factor = levels / 2.0 / mean;
  const double limit = levels;
  for (size_t i = 0; i < count; ++i) {
    // Clipping to the integer +/-levels before rounding gives what rounding
    // first would; it lets a truncation and the exact fraction round half
    // away from zero with no call to std::round (so the loop vectorises).
    const double scaled = static_cast<double>(x[i]) * factor;
    double clipped = scaled > limit ? limit : (scaled < -limit ? -limit : scaled);
    clipped = clipped == clipped ? clipped : 0.0;  // NaN
    const int whole = static_cast<int>(clipped);
    const double fraction = clipped - whole;  // exact: |clipped| <= 127
    q[i] = static_cast<int8_t>(whole + (fraction >= 0.5) - (fraction <= -0.5));
  }
}

void EncodeOneBit(const float* x, float* residual, size_t count, uint8_t* record) {
  double l1 = 0;
  for (size_t i = 0; i < count; ++i) l1 += std::fabs(static_cast<double>(x[i] + residual[i]));
  const float scale = count > 0 ? static_cast<float>(l1 / static_cast<double>(count)) : 0.0f;
  std::memcpy(record, &scale, sizeof(scale));
  uint8_t* bits = record + sizeof(scale);
  for (size_t first = 0; first < count; first += 8) {
    const size_t n = count - first < 8 ? count - first : 8;
    unsigned byte = 0;
    for (size_t j = 0; j < n; ++j) {
      const float y = x[first + j] + residual[first + j];
      const bool plus = VotesPlus(y);
      byte |= static_cast<unsigned>(plus) << j;
      residual[first + j] = y - (plus ? scale : -scale);
    }
    bits[first / 8] = static_cast<uint8_t>(byte);
  }
}

// Rank-major over blocks of elements: each element still sums its ranks'
// terms in rank order, in double, so the result is the documented one.
void DecodeOneBitMean(const uint8_t* records, size_t record_bytes, int nranks, size_t count, float* out) {
  constexpr size_t kBlock = 512;  // elements; a multiple of 8
  double sums[kBlock];
  for (size_t first = 0; first < count; first += kBlock) {
    const size_t n = count - first < kBlock ? count - first : kBlock;
    std::memset(sums, 0, n * sizeof(double));
    for (int r = 0; r < nranks; ++r) {
      const uint8_t* record = records + static_cast<size_t>(r) * record_bytes;
      float scale;
      std::memcpy(&scale, record, sizeof(scale));
      const double plus = scale, minus = -static_cast<double>(scale);
      const uint8_t* bits = record + sizeof(scale) + first / 8;
      for (size_t j = 0; j < n; ++j) sums[j] += ((bits[j / 8] >> (j % 8)) & 1u) ? plus : minus;
    }
    for (size_t j = 0; j < n; ++j) out[first + j] = static_cast<float>(sums[j] / nranks);
  }
}

}  // namespace chorus
