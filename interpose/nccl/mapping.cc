#include "interpose/nccl/mapping.h"

#include <iterator>

namespace chorus_nccl {
namespace {

struct DataTypeEntry {
  ncclDataType_t nccl;
  const char* name;
  bool supported;
  chorusDataType_t chorus;
};

// Indexed by ncclDataType_t (checked below). ncclChar, ncclInt, ncclHalf,
// ncclFloat and ncclDouble are aliases of the entries here.
constexpr DataTypeEntry kDataTypes[] = {
    {ncclInt8, "ncclInt8", true, chorusInt8},
    {ncclUint8, "ncclUint8", true, chorusUint8},
    {ncclInt32, "ncclInt32", true, chorusInt32},
    {ncclUint32, "ncclUint32", true, chorusUint32},
    {ncclInt64, "ncclInt64", true, chorusInt64},
    {ncclUint64, "ncclUint64", true, chorusUint64},
    {ncclFloat16, "ncclFloat16", true, chorusFloat16},
    {ncclFloat32, "ncclFloat32", true, chorusFloat32},
    {ncclFloat64, "ncclFloat64", true, chorusFloat64},
    {ncclBfloat16, "ncclBfloat16", true, chorusBfloat16},
    {ncclFloat8e4m3, "ncclFloat8e4m3", false, chorusNumTypes},
    {ncclFloat8e5m2, "ncclFloat8e5m2", false, chorusNumTypes},
};
static_assert(std::size(kDataTypes) == ncclNumTypes, "one entry per ncclDataType_t");

constexpr bool DataTypesIndexed() {
  for (size_t i = 0; i < std::size(kDataTypes); ++i) {
    if (static_cast<size_t>(kDataTypes[i].nccl) != i) return false;
  }
  return true;
}
static_assert(DataTypesIndexed(), "kDataTypes is indexed by ncclDataType_t");

struct RedOpEntry {
  ncclRedOp_t nccl;
  chorusRedOp_t chorus;
};

constexpr RedOpEntry kRedOps[] = {
    {ncclSum, chorusSum}, {ncclProd, chorusProd}, {ncclMax, chorusMax},
    {ncclMin, chorusMin}, {ncclAvg, chorusAvg},
};
static_assert(std::size(kRedOps) == ncclNumOps, "one entry per built-in ncclRedOp_t");
// Dynamic ops pass through unchanged, so both enums must start them at the
// same value and hold the same range.
static_assert(static_cast<int>(ncclNumOps) == static_cast<int>(chorusNumOps), "dynamic ops start alike");
static_assert(sizeof(ncclRedOp_t) == sizeof(chorusRedOp_t), "op handles have the same size");

struct ResultEntry {
  chorusResult_t chorus;
  ncclResult_t nccl;
};

constexpr ResultEntry kResults[] = {
    {chorusSuccess, ncclSuccess},
    {chorusSystemError, ncclSystemError},
    {chorusInternalError, ncclInternalError},
    {chorusInvalidArgument, ncclInvalidArgument},
    {chorusInvalidUsage, ncclInvalidUsage},
    {chorusRemoteError, ncclRemoteError},
    {chorusInProgress, ncclInProgress},
    {chorusTimeout, ncclRemoteError},
    {chorusRevoked, ncclRemoteError},
};
static_assert(std::size(kResults) == chorusNumResults, "one entry per chorusResult_t");

}  // namespace

bool MapDataType(ncclDataType_t type, chorusDataType_t* out, const char** why) {
  const int index = static_cast<int>(type);
  if (index < 0 || index >= static_cast<int>(std::size(kDataTypes))) {
    *why = "is not an ncclDataType_t";
    return false;
  }
  if (!kDataTypes[index].supported) {
    *why = "is not supported by Chorus (no fp8 arithmetic)";
    return false;
  }
  *out = kDataTypes[index].chorus;
  return true;
}

const char* DataTypeName(ncclDataType_t type) {
  const int index = static_cast<int>(type);
  if (index < 0 || index >= static_cast<int>(std::size(kDataTypes))) return "unknown";
  return kDataTypes[index].name;
}

bool MapRedOp(ncclRedOp_t op, chorusRedOp_t* out) {
  const int value = static_cast<int>(op);
  if (value < 0) return false;
  for (const RedOpEntry& entry : kRedOps) {
    if (entry.nccl == op) {
      *out = entry.chorus;
      return true;
    }
  }
  *out = static_cast<chorusRedOp_t>(value);  // a PreMulSum handle
  return true;
}

ncclResult_t MapResult(chorusResult_t result) {
  for (const ResultEntry& entry : kResults) {
    if (entry.chorus == result) return entry.nccl;
  }
  return ncclInternalError;
}

}  // namespace chorus_nccl
