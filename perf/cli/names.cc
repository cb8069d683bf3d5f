#include "perf/cli/names.h"

#include <utility>

namespace chorus::perf {

namespace {

constexpr const char* kTypeNames[chorusNumTypes] = {"int8",   "uint8", "int32", "uint32", "int64",
                                                    "uint64", "half",  "float", "double", "bfloat16"};
constexpr const char* kOpNames[kNumPerfOps] = {"sum", "prod", "max", "min", "avg", "mulsum"};

constexpr std::pair<const char*, chorusDataType_t> kTypeAliases[] = {
    {"char", chorusInt8},       {"int", chorusInt32},      {"fp16", chorusFloat16},
    {"float16", chorusFloat16}, {"fp32", chorusFloat32},   {"float32", chorusFloat32},
    {"fp64", chorusFloat64},    {"float64", chorusFloat64}, {"bf16", chorusBfloat16},
};

}  // namespace

const char* TypeName(chorusDataType_t type) {
  return type >= 0 && type < chorusNumTypes ? kTypeNames[type] : "?";
}

const char* OpName(PerfOp op) { return kOpNames[static_cast<int>(op)]; }

size_t TypeSize(chorusDataType_t type) {
  switch (type) {
    case chorusInt8: case chorusUint8: return 1;
    case chorusFloat16: case chorusBfloat16: return 2;
    case chorusInt32: case chorusUint32: case chorusFloat32: return 4;
    default: return 8;
  }
}

bool IsFloatType(chorusDataType_t type) {
  return type == chorusFloat16 || type == chorusFloat32 || type == chorusFloat64 || type == chorusBfloat16;
}

std::optional<std::vector<chorusDataType_t>> ParseTypes(const std::string& name) {
  std::vector<chorusDataType_t> types;
  if (name == "all") {
    for (int t = 0; t < chorusNumTypes; ++t) types.push_back(static_cast<chorusDataType_t>(t));
    return types;
  }
  for (int t = 0; t < chorusNumTypes; ++t) {
    if (name == kTypeNames[t]) return std::vector<chorusDataType_t>{static_cast<chorusDataType_t>(t)};
  }
  for (const auto& [alias, type] : kTypeAliases) {
    if (name == alias) return std::vector<chorusDataType_t>{type};
  }
  return std::nullopt;
}

std::optional<std::vector<PerfOp>> ParseOps(const std::string& name) {
  std::vector<PerfOp> ops;
  for (int o = 0; o < kNumPerfOps; ++o) {
    if (name == "all" || name == kOpNames[o]) ops.push_back(static_cast<PerfOp>(o));
  }
  if (ops.empty()) return std::nullopt;
  return ops;
}

}  // namespace chorus::perf
