#include "perf/cli/data_pattern.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/half.h"

namespace chorus::perf {

namespace {

// Prime, so that the blocks collectives move (powers of two, count/nranks)
// never line up with the period and a misplaced block shows.
constexpr size_t kPeriod = 1021;

size_t PatternIndex(size_t element, int seed) { return (element + static_cast<size_t>(seed) * 131) % kPeriod; }

// Values of moved data: 0..100, exact in every type (bf16 holds integers up
// to 256, int8 up to 127).
int64_t SourceValue(int source, size_t q) { return static_cast<int64_t>((q * 5 + static_cast<size_t>(source) * 17) % 101); }

// Small integers whose sums stay exact in bf16 (<= 256) even for mulsum
// (scalar <= 2): the range shrinks as ranks grow.
int64_t SumRange(int nranks) { return std::clamp<int64_t>(128 / std::max(nranks, 1), 1, 4); }
int64_t MulSumFactor(int rank) { return 1 + rank % 2; }

int64_t ReductionInput(PerfOp op, int nranks, int rank, size_t q) {
  switch (op) {
    case PerfOp::kProd:  // one rank contributes 2, the others 1: the product is 2
      return (q + static_cast<size_t>(rank)) % static_cast<size_t>(nranks) == 0 ? 2 : 1;
    case PerfOp::kMax:
    case PerfOp::kMin:
      return static_cast<int64_t>((q * 3 + static_cast<size_t>(rank) * 7) % 101);
    default:
      return static_cast<int64_t>((q * 3 + static_cast<size_t>(rank) * 7) % static_cast<size_t>(SumRange(nranks)));
  }
}

// The exact reduction over ranks, as an integer (no type wrapping yet).
int64_t ReducedInteger(PerfOp op, int nranks, size_t q) {
  int64_t result = ReductionInput(op, nranks, 0, q) * (op == PerfOp::kMulSum ? MulSumFactor(0) : 1);
  for (int rank = 1; rank < nranks; ++rank) {
    const int64_t value = ReductionInput(op, nranks, rank, q);
    switch (op) {
      case PerfOp::kProd: result *= value; break;
      case PerfOp::kMax: result = std::max(result, value); break;
      case PerfOp::kMin: result = std::min(result, value); break;
      case PerfOp::kMulSum: result += value * MulSumFactor(rank); break;
      default: result += value; break;
    }
  }
  return result;
}

// One codec per type: how an integer value is stored, and how avg divides
// (as the library does: integers truncate in the type, fp16/bf16 in float).
template <typename Storage>
struct IntegerCodec {
  using Element = Storage;
  static Element Encode(int64_t value) { return static_cast<Element>(value); }
  static Element Average(int64_t sum, int nranks) {
    const Element wrapped = static_cast<Element>(sum);
    return static_cast<Element>(wrapped / nranks);
  }
};

template <typename Real>
struct RealCodec {
  using Element = Real;
  static Element Encode(int64_t value) { return static_cast<Element>(value); }
  static Element Average(int64_t sum, int nranks) { return static_cast<Real>(sum) / static_cast<Real>(nranks); }
};

struct HalfCodec {
  using Element = uint16_t;
  static Element Encode(int64_t value) { return FloatToHalf(static_cast<float>(value)); }
  static Element Average(int64_t sum, int nranks) {
    return FloatToHalf(static_cast<float>(sum) / static_cast<float>(nranks));
  }
};

struct Bfloat16Codec {
  using Element = uint16_t;
  static Element Encode(int64_t value) { return FloatToBfloat16(static_cast<float>(value)); }
  static Element Average(int64_t sum, int nranks) {
    return FloatToBfloat16(static_cast<float>(sum) / static_cast<float>(nranks));
  }
};

template <typename Fn>
auto WithCodec(chorusDataType_t type, Fn&& fn) {
  switch (type) {
    case chorusInt8: return fn(IntegerCodec<int8_t>{});
    case chorusUint8: return fn(IntegerCodec<uint8_t>{});
    case chorusInt32: return fn(IntegerCodec<int32_t>{});
    case chorusUint32: return fn(IntegerCodec<uint32_t>{});
    case chorusInt64: return fn(IntegerCodec<int64_t>{});
    case chorusUint64: return fn(IntegerCodec<uint64_t>{});
    case chorusFloat16: return fn(HalfCodec{});
    case chorusFloat32: return fn(RealCodec<float>{});
    case chorusFloat64: return fn(RealCodec<double>{});
    default: return fn(Bfloat16Codec{});
  }
}

template <typename Element>
size_t CountMismatches(const void* buf, size_t first, size_t count, int seed, const std::vector<Element>& expected) {
  const auto* data = static_cast<const unsigned char*>(buf);
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    // Compare bytes, not values: NaN never equals itself and -0 equals 0.
    wrong += std::memcmp(data + i * sizeof(Element), &expected[PatternIndex(first + i, seed)], sizeof(Element)) != 0;
  }
  return wrong;
}

}  // namespace

void FillReductionInput(const ReductionPattern& pattern, int rank, void* buf, size_t first, size_t count) {
  WithCodec(pattern.type, [&](auto codec) {
    using Element = typename decltype(codec)::Element;
    auto* data = static_cast<Element*>(buf);
    for (size_t i = 0; i < count; ++i) {
      data[i] = codec.Encode(ReductionInput(pattern.op, pattern.nranks, rank, PatternIndex(first + i, pattern.seed)));
    }
  });
}

size_t CountWrongReduced(const ReductionPattern& pattern, const void* buf, size_t first, size_t count) {
  return WithCodec(pattern.type, [&](auto codec) {
    using Element = typename decltype(codec)::Element;
    std::vector<Element> expected(kPeriod);
    for (size_t q = 0; q < kPeriod; ++q) {
      const int64_t reduced = ReducedInteger(pattern.op, pattern.nranks, q);
      expected[q] = pattern.op == PerfOp::kAvg ? codec.Average(reduced, pattern.nranks) : codec.Encode(reduced);
    }
    return CountMismatches(buf, first, count, pattern.seed, expected);
  });
}

void FillSourceData(chorusDataType_t type, int seed, int source, void* buf, size_t first, size_t count) {
  WithCodec(type, [&](auto codec) {
    using Element = typename decltype(codec)::Element;
    auto* data = static_cast<Element*>(buf);
    for (size_t i = 0; i < count; ++i) data[i] = codec.Encode(SourceValue(source, PatternIndex(first + i, seed)));
  });
}

size_t CountWrongSourceData(chorusDataType_t type, int seed, int source, const void* buf, size_t first,
                            size_t count) {
  return WithCodec(type, [&](auto codec) {
    using Element = typename decltype(codec)::Element;
    std::vector<Element> expected(kPeriod);
    for (size_t q = 0; q < kPeriod; ++q) expected[q] = codec.Encode(SourceValue(source, q));
    return CountMismatches(buf, first, count, seed, expected);
  });
}

void MulSumScalar(chorusDataType_t type, int rank, void* out) {
  WithCodec(type, [&](auto codec) {
    const auto scalar = codec.Encode(MulSumFactor(rank));
    std::memcpy(out, &scalar, sizeof(scalar));
  });
}

}  // namespace chorus::perf
