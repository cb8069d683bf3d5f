#include "tests/api/reference.h"

#include <algorithm>
#include <cmath>

#include "tests/api/typed_buffer.h"

namespace chorus_test {
namespace {

double SmallInteger(chorusDataType_t dtype, int rank, size_t index) {
  const double base = static_cast<double>((index * 5 + static_cast<size_t>(rank) * 3 + 1) % 31);
  return IsSigned(dtype) ? base - 15 : base;
}

double ProdFactor(chorusDataType_t dtype, int rank, int nranks, size_t index) {
  if (static_cast<size_t>(rank) == index % static_cast<size_t>(nranks)) {
    switch (index % 4) {
      case 0:
        return 0;
      case 1:
        return 2;
      case 2:
        return IsSigned(dtype) ? -2 : 2;
      default:
        return 1;
    }
  }
  if (!IsSigned(dtype)) return 1;
  return (index + static_cast<size_t>(rank)) % 2 == 1 ? -1 : 1;
}

}  // namespace

double InputValue(chorusDataType_t dtype, chorusRedOp_t op, int rank, int nranks, size_t index) {
  switch (op) {
    case chorusProd:
      return ProdFactor(dtype, rank, nranks, index);
    case chorusAvg:
      if (IsFloat(dtype)) {
        const double base = static_cast<double>((index * 7) % 17) - 8;
        return base + 2 * rank - (nranks - 1);
      }
      return SmallInteger(dtype, rank, index);
    default:
      return SmallInteger(dtype, rank, index);
  }
}

double ReducedValue(chorusDataType_t dtype, chorusRedOp_t op, int nranks, size_t index) {
  double result = InputValue(dtype, op, 0, nranks, index);
  for (int rank = 1; rank < nranks; ++rank) {
    const double value = InputValue(dtype, op, rank, nranks, index);
    switch (op) {
      case chorusProd:
        result *= value;
        break;
      case chorusMax:
        result = std::max(result, value);
        break;
      case chorusMin:
        result = std::min(result, value);
        break;
      default:
        result += value;
        break;  // sum, avg
    }
  }
  if (op == chorusAvg) {
    result /= nranks;
    if (!IsFloat(dtype)) result = std::trunc(result);  // C integer division
  }
  return result;
}

double PlainValue(int rank, size_t index) {
  return static_cast<double>((static_cast<size_t>(rank) * 37 + index * 11) % 101);
}

}  // namespace chorus_test
