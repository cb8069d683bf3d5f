// Buffers of any chorus datatype addressed by element, with values carried
// as double. Tests only use small integers (and halves), which every type
// holds exactly, so comparisons are exact.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "chorus/chorus.h"

namespace chorus_test {

inline constexpr chorusDataType_t kAllDataTypes[] = {chorusInt8,    chorusUint8,   chorusInt32,   chorusUint32,
                                                     chorusInt64,   chorusUint64,  chorusFloat16, chorusFloat32,
                                                     chorusFloat64, chorusBfloat16};
inline constexpr chorusRedOp_t kAllOps[] = {chorusSum, chorusProd, chorusMax, chorusMin, chorusAvg};

size_t ElementSize(chorusDataType_t dtype);
bool IsSigned(chorusDataType_t dtype);
bool IsFloat(chorusDataType_t dtype);
const char* Name(chorusDataType_t dtype);
const char* Name(chorusRedOp_t op);

// Host memory for `count` elements of `dtype`. Element access converts from
// and to double (16-bit floats through base/half.h).
class TypedBuffer {
 public:
  TypedBuffer(chorusDataType_t dtype, size_t count);

  void* data() { return bytes_.data(); }
  const void* data() const { return bytes_.data(); }
  // Address of element `index` (in-place variants point into a buffer).
  void* at(size_t index) { return bytes_.data() + index * element_size_; }
  size_t count() const { return count_; }
  chorusDataType_t dtype() const { return dtype_; }

  void Set(size_t index, double value);
  double Get(size_t index) const;
  // Every byte set to `byte` (a sentinel that no test value encodes).
  void FillBytes(uint8_t byte);
  bool AllBytesAre(uint8_t byte) const;

 private:
  chorusDataType_t dtype_;
  size_t count_;
  size_t element_size_;
  std::vector<uint8_t> bytes_;
};

// Compares buffer[offset + i] with expected[i]; returns "" when all match,
// else a description of the first mismatch and how many differ.
std::string CompareRange(const TypedBuffer& buffer, size_t offset, const std::vector<double>& expected);

}  // namespace chorus_test
