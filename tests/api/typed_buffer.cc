#include "tests/api/typed_buffer.h"

#include <cstring>

#include "base/half.h"

namespace chorus_test {

size_t ElementSize(chorusDataType_t dtype) {
  switch (dtype) {
    case chorusInt8:
    case chorusUint8:
      return 1;
    case chorusFloat16:
    case chorusBfloat16:
      return 2;
    case chorusInt32:
    case chorusUint32:
    case chorusFloat32:
      return 4;
    case chorusInt64:
    case chorusUint64:
    case chorusFloat64:
      return 8;
    default:
      return 0;
  }
}

bool IsSigned(chorusDataType_t dtype) { return dtype != chorusUint8 && dtype != chorusUint32 && dtype != chorusUint64; }

bool IsFloat(chorusDataType_t dtype) {
  return dtype == chorusFloat16 || dtype == chorusFloat32 || dtype == chorusFloat64 || dtype == chorusBfloat16;
}

const char* Name(chorusDataType_t dtype) {
  switch (dtype) {
    case chorusInt8:
      return "int8";
    case chorusUint8:
      return "uint8";
    case chorusInt32:
      return "int32";
    case chorusUint32:
      return "uint32";
    case chorusInt64:
      return "int64";
    case chorusUint64:
      return "uint64";
    case chorusFloat16:
      return "float16";
    case chorusFloat32:
      return "float32";
    case chorusFloat64:
      return "float64";
    case chorusBfloat16:
      return "bfloat16";
    default:
      return "unknown-dtype";
  }
}

const char* Name(chorusRedOp_t op) {
  switch (op) {
    case chorusSum:
      return "sum";
    case chorusProd:
      return "prod";
    case chorusMax:
      return "max";
    case chorusMin:
      return "min";
    case chorusAvg:
      return "avg";
    default:
      return "premulsum-or-unknown";
  }
}

TypedBuffer::TypedBuffer(chorusDataType_t dtype, size_t count)
    : dtype_(dtype),
      count_(count),
      element_size_(ElementSize(dtype)),
      bytes_(count * ElementSize(dtype) + 1) {}  // +1: data() is never null

namespace {

template <typename T>
void StoreAs(void* where, T value) {
  std::memcpy(where, &value, sizeof(T));
}

template <typename T>
T LoadAs(const void* where) {
  T value;
  std::memcpy(&value, where, sizeof(T));
  return value;
}

}  // namespace

void TypedBuffer::Set(size_t index, double value) {
  void* where = bytes_.data() + index * element_size_;
  switch (dtype_) {
    case chorusInt8:
      StoreAs<int8_t>(where, static_cast<int8_t>(value));
      break;
    case chorusUint8:
      StoreAs<uint8_t>(where, static_cast<uint8_t>(value));
      break;
    case chorusInt32:
      StoreAs<int32_t>(where, static_cast<int32_t>(value));
      break;
    case chorusUint32:
      StoreAs<uint32_t>(where, static_cast<uint32_t>(value));
      break;
    case chorusInt64:
      StoreAs<int64_t>(where, static_cast<int64_t>(value));
      break;
    case chorusUint64:
      StoreAs<uint64_t>(where, static_cast<uint64_t>(value));
      break;
    case chorusFloat16:
      StoreAs<uint16_t>(where, chorus::FloatToHalf(static_cast<float>(value)));
      break;
    case chorusBfloat16:
      StoreAs<uint16_t>(where, chorus::FloatToBfloat16(static_cast<float>(value)));
      break;
    case chorusFloat32:
      StoreAs<float>(where, static_cast<float>(value));
      break;
    case chorusFloat64:
      StoreAs<double>(where, value);
      break;
    default:
      break;
  }
}

double TypedBuffer::Get(size_t index) const {
  const void* where = bytes_.data() + index * element_size_;
  switch (dtype_) {
    case chorusInt8:
      return LoadAs<int8_t>(where);
    case chorusUint8:
      return LoadAs<uint8_t>(where);
    case chorusInt32:
      return LoadAs<int32_t>(where);
    case chorusUint32:
      return LoadAs<uint32_t>(where);
    case chorusInt64:
      return static_cast<double>(LoadAs<int64_t>(where));
    case chorusUint64:
      return static_cast<double>(LoadAs<uint64_t>(where));
    case chorusFloat16:
      return chorus::HalfToFloat(LoadAs<uint16_t>(where));
    case chorusBfloat16:
      return chorus::Bfloat16ToFloat(LoadAs<uint16_t>(where));
    case chorusFloat32:
      return LoadAs<float>(where);
    case chorusFloat64:
      return LoadAs<double>(where);
    default:
      return 0;
  }
}

void TypedBuffer::FillBytes(uint8_t byte) { std::memset(bytes_.data(), byte, bytes_.size()); }

bool TypedBuffer::AllBytesAre(uint8_t byte) const {
  for (uint8_t b : bytes_) {
    if (b != byte) return false;
  }
  return true;
}

std::string CompareRange(const TypedBuffer& buffer, size_t offset, const std::vector<double>& expected) {
  size_t wrong = 0;
  std::string first;
  for (size_t i = 0; i < expected.size(); ++i) {
    const double got = buffer.Get(offset + i);
    if (got == expected[i]) continue;
    if (wrong++ == 0) {
      first =
          "element " + std::to_string(i) + ": got " + std::to_string(got) + ", expected " + std::to_string(expected[i]);
    }
  }
  if (wrong == 0) return "";
  return std::string(Name(buffer.dtype())) + " " + first + " (" + std::to_string(wrong) + " of " +
         std::to_string(expected.size()) + " wrong)";
}

}  // namespace chorus_test
