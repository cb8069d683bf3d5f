// Public communicator-management entry points.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "base/config.h"
#include "base/log.h"
#include "core/comm_factory.h"
#include "core/handles.h"
#include "core/launcher.h"

using chorus::InvalidArgument;
using chorus::InvalidUsage;
using chorus::Status;

namespace chorus {
namespace {

// Errors not tied to a communicator are kept per thread.
char* ThreadLastError() {
  thread_local char text[1024] = "";
  return text;
}

void CopyMessage(char* dst, size_t size, const std::string& message) {
  size_t n = std::min(size - 1, message.size());
  std::memcpy(dst, message.data(), n);
  dst[n] = '\0';
}

}  // namespace

const char* ThreadLastErrorText() { return ThreadLastError(); }

chorusResult_t Report(chorusComm* comm, const Status& status) {
  if (status.ok()) return chorusSuccess;
  CopyMessage(ThreadLastError(), 1024, status.message());
  if (comm != nullptr) {
    uint32_t state = comm->state.load();
    if (state == chorusComm::kLive || state == chorusComm::kDestroyed || state == chorusComm::kAborted) {
      std::lock_guard<std::mutex> lock(comm->error_mutex);
      CopyMessage(comm->last_error, sizeof(comm->last_error), status.message());
    }
  }
  return status.code();
}

Status CheckComm(const chorusComm* comm) {
  if (comm == nullptr) return InvalidArgument("comm is NULL");
  switch (comm->state.load()) {
    case chorusComm::kLive: return Status::Ok();
    case chorusComm::kDestroyed: return InvalidUsage("the communicator was destroyed");
    case chorusComm::kAborted: return InvalidUsage("the communicator was aborted");
    default: return InvalidArgument("comm is not a valid communicator handle");
  }
}

}  // namespace chorus

extern "C" {

chorusResult_t chorusGetVersion(int* version) {
  if (version == nullptr) return chorus::Report(nullptr, InvalidArgument("chorusGetVersion: version is NULL"));
  *version = CHORUS_VERSION_CODE;
  return chorusSuccess;
}

chorusResult_t chorusGetUniqueId(chorusUniqueId* unique_id) {
  if (unique_id == nullptr) return chorus::Report(nullptr, InvalidArgument("chorusGetUniqueId: uniqueId is NULL"));
  return chorus::Report(nullptr, chorus::MakeUniqueId(unique_id).WithContext("chorusGetUniqueId"));
}

chorusResult_t chorusCommInitRankConfig(chorusComm_t* comm, int nranks, chorusUniqueId comm_id, int rank,
                                        chorusConfig_t* config) {
  if (comm == nullptr) return chorus::Report(nullptr, InvalidArgument("chorusCommInitRank: comm is NULL"));
  *comm = nullptr;
  std::unique_ptr<chorusComm> shell;
  Status status = chorus::CreateComm(comm_id, nranks, rank, config, &shell);
  if (!status.ok()) return chorus::Report(nullptr, status.WithContext("chorusCommInitRank"));
  *comm = shell.release();
  return chorusSuccess;
}

chorusResult_t chorusCommInitRank(chorusComm_t* comm, int nranks, chorusUniqueId comm_id, int rank) {
  return chorusCommInitRankConfig(comm, nranks, comm_id, rank, nullptr);
}

chorusResult_t chorusCommInitAll(chorusComm_t* comms, int ndev, const int* /*devlist*/) {
  if (comms == nullptr) return chorus::Report(nullptr, InvalidArgument("chorusCommInitAll: comms is NULL"));
  if (ndev < 1) return chorus::Report(nullptr, InvalidArgument("chorusCommInitAll: ndev ", ndev, " < 1"));
  chorusUniqueId id;
  chorusResult_t result = chorusGetUniqueId(&id);
  if (result != chorusSuccess) return result;
  std::vector<chorusResult_t> results(ndev, chorusSuccess);
  std::vector<std::string> messages(ndev);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < ndev; ++rank) {
    threads.emplace_back([&, rank] {
      results[rank] = chorusCommInitRank(&comms[rank], ndev, id, rank);
      if (results[rank] != chorusSuccess) messages[rank] = chorusGetLastError(nullptr);
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int rank = 0; rank < ndev; ++rank) {
    if (results[rank] == chorusSuccess) continue;
    for (int other = 0; other < ndev; ++other) {
      if (comms[other] != nullptr) chorusCommDestroy(comms[other]);
      comms[other] = nullptr;
    }
    return chorus::Report(nullptr, Status(results[rank], "chorusCommInitAll: " + messages[rank]));
  }
  return chorusSuccess;
}

chorusResult_t chorusCommInitFromEnv(chorusComm_t* comm, chorusConfig_t* config) {
  if (comm == nullptr) return chorus::Report(nullptr, InvalidArgument("chorusCommInitFromEnv: comm is NULL"));
  *comm = nullptr;
  std::unique_ptr<chorusComm> shell;
  Status status = chorus::CreateCommFromEnvironment(config, &shell);
  if (!status.ok()) return chorus::Report(nullptr, status.WithContext("chorusCommInitFromEnv"));
  *comm = shell.release();
  return chorusSuccess;
}

chorusResult_t chorusCommSplit(chorusComm_t comm, int color, int key, chorusComm_t* newcomm,
                               chorusConfig_t* config) {
  Status status = chorus::CheckComm(comm);
  if (status.ok() && newcomm == nullptr) status = InvalidArgument("newcomm is NULL");
  if (status.ok() && color < 0 && color != CHORUS_SPLIT_NOCOLOR) {
    status = InvalidArgument("color ", color, " is negative (use CHORUS_SPLIT_NOCOLOR)");
  }
  if (!status.ok()) return chorus::Report(comm, status.WithContext("chorusCommSplit"));
  *newcomm = nullptr;
  std::unique_ptr<chorusComm> shell;
  status = chorus::SplitComm(comm, color, key, config, &shell);
  if (!status.ok()) return chorus::Report(comm, status.WithContext("chorusCommSplit"));
  *newcomm = shell.release();
  return chorusSuccess;
}

chorusResult_t chorusCommShrinkConfig(chorusComm_t comm, chorusComm_t* newcomm, chorusConfig_t* config) {
  Status status = chorus::CheckComm(comm);
  if (status.ok() && newcomm == nullptr) status = InvalidArgument("newcomm is NULL");
  if (!status.ok()) return chorus::Report(comm, status.WithContext("chorusCommShrink"));
  *newcomm = nullptr;
  std::unique_ptr<chorusComm> shell;
  status = chorus::ShrinkComm(comm, config, &shell);
  if (!status.ok()) return chorus::Report(comm, status.WithContext("chorusCommShrink"));
  *newcomm = shell.release();
  return chorusSuccess;
}

chorusResult_t chorusCommShrink(chorusComm_t comm, chorusComm_t* newcomm) {
  return chorusCommShrinkConfig(comm, newcomm, nullptr);
}

chorusResult_t chorusCommFinalize(chorusComm_t comm) {
  Status status = chorus::CheckComm(comm);
  if (status.ok()) status = comm->impl->WaitIdle();
  if (status.ok()) status = comm->impl->async_error();
  return chorus::Report(comm, status.WithContext("chorusCommFinalize"));
}

chorusResult_t chorusCommDestroy(chorusComm_t comm) {
  Status status = chorus::CheckComm(comm);
  if (!status.ok()) return chorus::Report(comm, status.WithContext("chorusCommDestroy"));
  status = comm->impl->WaitIdle();
  if (!status.ok()) {
    comm->impl->Abort();  // stuck work: make it fail, then wait for it
    comm->impl->WaitIdle().IgnoreError();
  }
  comm->state.store(chorusComm::kDestroyed);
  comm->heartbeat.reset();  // says goodbye: peers do not take us for silent
  comm->impl.reset();
  comm->recovery.reset();
  return chorus::Report(comm, status.WithContext("chorusCommDestroy"));
}

chorusResult_t chorusCommAbort(chorusComm_t comm) {
  Status status = chorus::CheckComm(comm);
  if (!status.ok()) return chorus::Report(comm, status.WithContext("chorusCommAbort"));
  comm->impl->Abort();
  status = comm->impl->WaitIdle();
  comm->state.store(chorusComm::kAborted);
  comm->heartbeat.reset();
  comm->impl.reset();
  comm->recovery.reset();
  return chorus::Report(comm, status.WithContext("chorusCommAbort"));
}

chorusResult_t chorusCommRevoke(chorusComm_t comm) {
  Status status = chorus::CheckComm(comm);
  if (status.ok()) status = comm->impl->Revoke();
  return chorus::Report(comm, status.WithContext("chorusCommRevoke"));
}

chorusResult_t chorusCommGetAsyncError(chorusComm_t comm, chorusResult_t* async_error) {
  Status status = chorus::CheckComm(comm);
  if (status.ok() && async_error == nullptr) status = InvalidArgument("asyncError is NULL");
  if (!status.ok()) return chorus::Report(comm, status.WithContext("chorusCommGetAsyncError"));
  Status error = comm->impl->async_error();
  if (!error.ok()) chorus::Report(comm, error);
  *async_error = error.code();
  return chorusSuccess;
}

chorusResult_t chorusCommDumpTrace(chorusComm_t comm, const char* path) {
  Status status = chorus::CheckComm(comm);
  if (status.ok()) status = comm->impl->DumpTrace(path != nullptr ? path : "", "api");
  return chorus::Report(comm, status.WithContext("chorusCommDumpTrace"));
}

chorusResult_t chorusCommRegister(const chorusComm_t comm, void* buff, size_t size, void** handle) {
  Status status = chorus::CheckComm(comm);
  if (status.ok() && handle == nullptr) status = InvalidArgument("handle is NULL");
  const void* registration = nullptr;
  if (status.ok()) status = comm->impl->RegisterBuffer(buff, size, &registration);
  if (!status.ok()) return chorus::Report(comm, status.WithContext("chorusCommRegister"));
  *handle = const_cast<void*>(registration);
  return chorusSuccess;
}

chorusResult_t chorusCommDeregister(const chorusComm_t comm, void* handle) {
  Status status = chorus::CheckComm(comm);
  if (status.ok() && handle == nullptr) status = InvalidArgument("handle is NULL");
  if (status.ok()) status = comm->impl->DeregisterBuffer(handle);
  return chorus::Report(comm, status.WithContext("chorusCommDeregister"));
}

chorusResult_t chorusCommCount(const chorusComm_t comm, int* count) {
  Status status = chorus::CheckComm(comm);
  if (status.ok() && count == nullptr) status = InvalidArgument("count is NULL");
  if (!status.ok()) return chorus::Report(comm, status.WithContext("chorusCommCount"));
  *count = comm->impl->nranks();
  return chorusSuccess;
}

chorusResult_t chorusCommUserRank(const chorusComm_t comm, int* rank) {
  Status status = chorus::CheckComm(comm);
  if (status.ok() && rank == nullptr) status = InvalidArgument("rank is NULL");
  if (!status.ok()) return chorus::Report(comm, status.WithContext("chorusCommUserRank"));
  *rank = comm->impl->rank();
  return chorusSuccess;
}

const char* chorusGetErrorString(chorusResult_t result) {
  switch (result) {
    case chorusSuccess: return "no error";
    case chorusSystemError: return "system error (an OS call failed)";
    case chorusInternalError: return "internal error (a bug or a protocol violation)";
    case chorusInvalidArgument: return "invalid argument";
    case chorusInvalidUsage: return "invalid usage (a call made in the wrong state)";
    case chorusRemoteError: return "remote error (a peer failed or disconnected)";
    case chorusInProgress: return "operation in progress";
    case chorusTimeout: return "timeout (CHORUS_TIMEOUT_MS passed)";
    case chorusRevoked: return "revoked (a rank called chorusCommRevoke; shrink, abort or destroy the communicator)";
    default: return "unknown result code";
  }
}

const char* chorusGetLastError(chorusComm_t comm) {
  if (comm == nullptr) return chorus::ThreadLastErrorText();
  uint32_t state = comm->state.load();
  if (state != chorusComm::kLive && state != chorusComm::kDestroyed && state != chorusComm::kAborted) {
    return "invalid communicator handle";
  }
  return comm->last_error;
}

}  // extern "C"
