// Library and communicator management entry points of nccl.h.
#include <cstdlib>
#include <cstring>
#include <string>

#include "interpose/nccl/config.h"
#include "interpose/nccl/group.h"
#include "interpose/nccl/last_error.h"
#include "interpose/nccl/mapping.h"
#include "interpose/nccl/nccl_api.h"

using chorus_nccl::Fail;
using chorus_nccl::FromChorus;
using chorus_nccl::ToChorus;
using chorus_nccl::ToNccl;

static_assert(sizeof(chorusUniqueId) <= sizeof(ncclUniqueId), "a Chorus id travels inside an NCCL id");

namespace {

constexpr size_t kMemAlignment = 4096;  // NCCL_WIN_REQUIRED_ALIGNMENT, also a page

chorusUniqueId FromNcclId(const ncclUniqueId& id) {
  chorusUniqueId out;
  std::memcpy(&out, &id, sizeof(out));
  return out;
}

// Creates the communicator now, or at the outermost ncclGroupEnd when
// called inside a group (see group.h). *comm is written when it exists.
ncclResult_t InitRank(const char* api, ncclComm_t* comm, int nranks, const ncclUniqueId& id, int rank,
                      const ncclConfig_t* config) {
  if (comm == nullptr) return Fail(ncclInvalidArgument, api, "comm is NULL");
  chorusConfig_t chorus_config;
  ncclResult_t result = chorus_nccl::MapConfig(config, api, &chorus_config);
  if (result != ncclSuccess) return result;
  if (nranks < 1) return Fail(ncclInvalidArgument, api, "nranks " + std::to_string(nranks) + " < 1");
  if (rank < 0 || rank >= nranks) {
    return Fail(ncclInvalidArgument, api,
                "rank " + std::to_string(rank) + " is out of range [0, " + std::to_string(nranks) + ")");
  }
  chorusUniqueId chorus_id = FromNcclId(id);
  auto create = [api, comm, nranks, chorus_id, rank, chorus_config]() mutable {
    chorusComm_t made = nullptr;
    ncclResult_t made_result =
        FromChorus(chorusCommInitRankConfig(&made, nranks, chorus_id, rank, &chorus_config), api);
    *comm = ToNccl(made);
    return made_result;
  };
  if (chorus_nccl::InGroup()) {
    chorus_nccl::DeferCreation(create);
    return ncclSuccess;
  }
  return create();
}

}  // namespace

NCCL_API(ncclResult_t, ncclGetVersion, int* version) {
  if (version == nullptr) return Fail(ncclInvalidArgument, "ncclGetVersion", "version is NULL");
  *version = NCCL_VERSION_CODE;  // the nccl.h this library implements
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclGetUniqueId, ncclUniqueId* uniqueId) {
  if (uniqueId == nullptr) return Fail(ncclInvalidArgument, "ncclGetUniqueId", "uniqueId is NULL");
  chorusUniqueId id;
  ncclResult_t result = FromChorus(chorusGetUniqueId(&id), "ncclGetUniqueId");
  if (result != ncclSuccess) return result;
  std::memset(uniqueId, 0, sizeof(*uniqueId));
  std::memcpy(uniqueId, &id, sizeof(id));
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommInitRankConfig, ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
         ncclConfig_t* config) {
  return InitRank("ncclCommInitRankConfig", comm, nranks, commId, rank, config);
}

NCCL_API(ncclResult_t, ncclCommInitRank, ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return InitRank("ncclCommInitRank", comm, nranks, commId, rank, nullptr);
}

// Several ids only spread NCCL's bootstrap over several roots; Chorus's
// rendezvous needs one, so the first is used (the roots of the others
// time out on their own after CHORUS_TIMEOUT_MS).
NCCL_API(ncclResult_t, ncclCommInitRankScalable, ncclComm_t* newcomm, int nranks, int myrank, int nId,
         ncclUniqueId* commIds, ncclConfig_t* config) {
  if (nId < 1 || commIds == nullptr) {
    return Fail(ncclInvalidArgument, "ncclCommInitRankScalable", "needs nId >= 1 ids in commIds");
  }
  return InitRank("ncclCommInitRankScalable", newcomm, nranks, commIds[0], myrank, config);
}

NCCL_API(ncclResult_t, ncclCommInitAll, ncclComm_t* comm, int ndev, const int* devlist) {
  if (comm == nullptr) return Fail(ncclInvalidArgument, "ncclCommInitAll", "comm is NULL");
  if (ndev < 1) return Fail(ncclInvalidArgument, "ncclCommInitAll", "ndev " + std::to_string(ndev) + " < 1");
  static_assert(sizeof(ncclComm_t) == sizeof(chorusComm_t), "handle arrays have the same layout");
  return FromChorus(chorusCommInitAll(reinterpret_cast<chorusComm_t*>(comm), ndev, devlist), "ncclCommInitAll");
}

NCCL_API(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
         ncclConfig_t* config) {
  const char* api = "ncclCommSplit";
  if (comm == nullptr) return Fail(ncclInvalidArgument, api, "comm is NULL");
  if (newcomm == nullptr) return Fail(ncclInvalidArgument, api, "newcomm is NULL");
  chorusConfig_t chorus_config;
  ncclResult_t result = chorus_nccl::MapConfig(config, api, &chorus_config);
  if (result != ncclSuccess) return result;
  const bool inherit = config == nullptr;  // NCCL: a NULL config inherits the parent's
  auto create = [api, comm, color, key, newcomm, chorus_config, inherit]() mutable {
    chorusComm_t made = nullptr;
    ncclResult_t made_result = FromChorus(
        chorusCommSplit(ToChorus(comm), color, key, &made, inherit ? nullptr : &chorus_config), api);
    *newcomm = ToNccl(made);
    return made_result;
  };
  if (chorus_nccl::InGroup()) {
    chorus_nccl::DeferCreation(create);
    return ncclSuccess;
  }
  return create();
}

// Chorus's shrink finds the dead ranks itself; the list is checked against
// what it found, so a shrink never silently keeps a rank the caller excluded.
NCCL_API(ncclResult_t, ncclCommShrink, ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
         ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  const char* api = "ncclCommShrink";
  (void)shrinkFlags;  // the parent is failed or idle either way: Chorus aborts nothing it needs
  if (comm == nullptr) return Fail(ncclInvalidArgument, api, "comm is NULL");
  if (newcomm == nullptr) return Fail(ncclInvalidArgument, api, "newcomm is NULL");
  if (excludeRanksCount < 0 || (excludeRanksCount > 0 && excludeRanksList == nullptr)) {
    return Fail(ncclInvalidArgument, api, "excludeRanksList does not hold excludeRanksCount ranks");
  }
  int nranks = 0;
  ncclResult_t result = FromChorus(chorusCommCount(ToChorus(comm), &nranks), api);
  if (result != ncclSuccess) return result;
  chorusConfig_t chorus_config;
  result = chorus_nccl::MapConfig(config, api, &chorus_config);
  if (result != ncclSuccess) return result;
  chorusComm_t made = nullptr;
  result = FromChorus(chorusCommShrinkConfig(ToChorus(comm), &made, config ? &chorus_config : nullptr), api);
  if (result != ncclSuccess) return result;
  int kept = 0;
  chorusCommCount(made, &kept);
  if (kept != nranks - excludeRanksCount) {
    chorusCommDestroy(made);
    return Fail(ncclInvalidUsage, api,
                "Chorus's shrink keeps the ranks still alive (" + std::to_string(kept) + " of " +
                    std::to_string(nranks) + "), not " + std::to_string(nranks - excludeRanksCount) +
                    ": excluding live ranks is not supported");
  }
  *newcomm = ToNccl(made);
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommFinalize, ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;  // as NCCL
  return FromChorus(chorusCommFinalize(ToChorus(comm)), "ncclCommFinalize");
}

NCCL_API(ncclResult_t, ncclCommDestroy, ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;  // as NCCL
  return FromChorus(chorusCommDestroy(ToChorus(comm)), "ncclCommDestroy");
}

NCCL_API(ncclResult_t, ncclCommAbort, ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;  // as NCCL
  return FromChorus(chorusCommAbort(ToChorus(comm)), "ncclCommAbort");
}

// Chorus revokes on every rank (ULFM's semantics), where NCCL revokes the
// local rank only: an NCCL program that revokes on every rank gets the same
// result, sooner on the ranks that have not revoked yet.
NCCL_API(ncclResult_t, ncclCommRevoke, ncclComm_t comm, int revokeFlags) {
  const char* api = "ncclCommRevoke";
  if (comm == nullptr) return Fail(ncclInvalidArgument, api, "comm is NULL");
  // NCCL_REVOKE_DEFAULT (0) is the only flag value defined.
  if (revokeFlags != 0) return Fail(ncclInvalidArgument, api, "revokeFlags must be NCCL_REVOKE_DEFAULT (0)");
  return FromChorus(chorusCommRevoke(ToChorus(comm)), api);
}

NCCL_API(ncclResult_t, ncclCommGetAsyncError, ncclComm_t comm, ncclResult_t* asyncError) {
  const char* api = "ncclCommGetAsyncError";
  if (comm == nullptr) return Fail(ncclInvalidArgument, api, "comm is NULL");
  if (asyncError == nullptr) return Fail(ncclInvalidArgument, api, "asyncError is NULL");
  chorusResult_t error = chorusSuccess;
  ncclResult_t result = FromChorus(chorusCommGetAsyncError(ToChorus(comm), &error), api);
  if (result != ncclSuccess) return result;
  *asyncError = chorus_nccl::MapResult(error);
  if (error != chorusSuccess) FromChorus(error, api);  // keep Chorus's message as the last error
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommCount, const ncclComm_t comm, int* count) {
  if (comm == nullptr) return Fail(ncclInvalidArgument, "ncclCommCount", "comm is NULL");
  return FromChorus(chorusCommCount(ToChorus(comm), count), "ncclCommCount");
}

NCCL_API(ncclResult_t, ncclCommUserRank, const ncclComm_t comm, int* rank) {
  if (comm == nullptr) return Fail(ncclInvalidArgument, "ncclCommUserRank", "comm is NULL");
  return FromChorus(chorusCommUserRank(ToChorus(comm), rank), "ncclCommUserRank");
}

// Host memory has no device: every communicator reports device 0.
NCCL_API(ncclResult_t, ncclCommCuDevice, const ncclComm_t comm, int* device) {
  const char* api = "ncclCommCuDevice";
  if (comm == nullptr) return Fail(ncclInvalidArgument, api, "comm is NULL");
  if (device == nullptr) return Fail(ncclInvalidArgument, api, "device is NULL");
  int nranks = 0;
  ncclResult_t result = FromChorus(chorusCommCount(ToChorus(comm), &nranks), api);  // validates the handle
  if (result != ncclSuccess) return result;
  *device = 0;
  return ncclSuccess;
}

NCCL_API(const char*, ncclGetErrorString, ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error";
    case ncclSystemError: return "unhandled system error (see ncclGetLastError, CHORUS_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error (see ncclGetLastError)";
    case ncclInvalidArgument: return "invalid argument (see ncclGetLastError)";
    case ncclInvalidUsage: return "invalid usage (see ncclGetLastError)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

// As NCCL's: the calling thread's last error, whatever `comm` is.
NCCL_API(const char*, ncclGetLastError, ncclComm_t comm) {
  (void)comm;
  return chorus_nccl::LastError();
}

// Logging follows CHORUS_DEBUG, read once; there is nothing to reload.
NCCL_API(void, ncclResetDebugInit, void) {}

// Registration lets a transport that moves registered memory directly
// (ibverbs) skip its staging copies; others ignore it (chorusCommRegister).
NCCL_API(ncclResult_t, ncclCommRegister, const ncclComm_t comm, void* buff, size_t size, void** handle) {
  const char* api = "ncclCommRegister";
  if (comm == nullptr) return Fail(ncclInvalidArgument, api, "comm is NULL");
  return FromChorus(chorusCommRegister(ToChorus(comm), buff, size, handle), api);
}

NCCL_API(ncclResult_t, ncclCommDeregister, const ncclComm_t comm, void* handle) {
  const char* api = "ncclCommDeregister";
  if (comm == nullptr) return Fail(ncclInvalidArgument, api, "comm is NULL");
  return FromChorus(chorusCommDeregister(ToChorus(comm), handle), api);
}

NCCL_API(ncclResult_t, ncclCommWindowRegister, ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
         int winFlags) {
  (void)comm, (void)buff, (void)size, (void)win, (void)winFlags;
  return Fail(ncclInvalidUsage, "ncclCommWindowRegister",
              "symmetric memory windows are not supported by Chorus (device memory)");
}

NCCL_API(ncclResult_t, ncclCommWindowDeregister, ncclComm_t comm, ncclWindow_t win) {
  (void)comm, (void)win;
  return Fail(ncclInvalidUsage, "ncclCommWindowDeregister",
              "symmetric memory windows are not supported by Chorus (device memory)");
}

// This build serves host memory, so NCCL's allocator hands out host memory.
NCCL_API(ncclResult_t, ncclMemAlloc, void** ptr, size_t size) {
  if (ptr == nullptr) return Fail(ncclInvalidArgument, "ncclMemAlloc", "ptr is NULL");
  *ptr = nullptr;
  if (size == 0) return ncclSuccess;
  if (posix_memalign(ptr, kMemAlignment, size) != 0) {
    *ptr = nullptr;
    return Fail(ncclSystemError, "ncclMemAlloc", "out of host memory for " + std::to_string(size) + " bytes");
  }
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclMemFree, void* ptr) {
  std::free(ptr);
  return ncclSuccess;
}
