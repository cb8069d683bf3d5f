// The one place where NCCL's enums meet Chorus's: datatypes, reduction ops
// and result codes, each a single table in mapping.cc.
#pragma once

#include <nccl.h>

#include "chorus/chorus.h"

namespace chorus_nccl {

// The Chorus type of `type`, or false when Chorus has none (the fp8 types,
// values outside the enum). *why names the reason for the error message.
bool MapDataType(ncclDataType_t type, chorusDataType_t* out, const char** why);

// "ncclFloat32", or "unknown" for values outside the enum.
const char* DataTypeName(ncclDataType_t type);

// The Chorus op of `op`: the built-ins by table; values from
// ncclRedOpCreatePreMulSum (>= ncclNumOps) are Chorus's own handles and
// pass unchanged (Chorus validates them against the communicator). Negative
// values have no mapping.
bool MapRedOp(ncclRedOp_t op, chorusRedOp_t* out);

// The NCCL result for a Chorus result. chorusTimeout becomes
// ncclRemoteError: NCCL has no timeout code, and a deadline that passes
// means a peer did not answer. So does chorusRevoked: NCCL has no revoked
// code, and programs recover from ncclRemoteError by shrinking.
ncclResult_t MapResult(chorusResult_t result);

}  // namespace chorus_nccl
