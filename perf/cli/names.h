// nccl-tests' names for data types and reduction ops, and their parsing.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "chorus/chorus.h"

namespace chorus::perf {

// A reduction op of the CLIs: the public ops plus nccl-tests' "mulsum",
// which is chorusRedOpCreatePreMulSum with a per-rank scalar.
enum class PerfOp { kSum = 0, kProd, kMax, kMin, kAvg, kMulSum };
inline constexpr int kNumPerfOps = 6;

const char* TypeName(chorusDataType_t type);
const char* OpName(PerfOp op);
size_t TypeSize(chorusDataType_t type);
bool IsFloatType(chorusDataType_t type);

// "float", "all", ... (nccl-tests spellings plus a few aliases such as
// "fp16" and "bf16"). nullopt when the name is unknown.
std::optional<std::vector<chorusDataType_t>> ParseTypes(const std::string& name);
std::optional<std::vector<PerfOp>> ParseOps(const std::string& name);

}  // namespace chorus::perf
