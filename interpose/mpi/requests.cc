#include "interpose/mpi/requests.h"

#include <atomic>
#include <mutex>
#include <unordered_set>

#include "interpose/mpi/errors.h"
#include "interpose/mpi/progress.h"

namespace chorus_mpi {
namespace {

static_assert(sizeof(MPI_Request) == sizeof(void*), "MPI_Request must be a pointer-sized handle");

std::atomic<long> live_count{0};
std::mutex registry_mutex;
std::unordered_set<const void*>* registry = new std::unordered_set<const void*>();

Request* FromHandle(MPI_Request handle) { return reinterpret_cast<Request*>(handle); }

}  // namespace

MPI_Request Publish(std::unique_ptr<Request> request) {
  Request* raw = request.release();
  {
    std::lock_guard<std::mutex> lock(registry_mutex);
    registry->insert(raw);
  }
  live_count.fetch_add(1, std::memory_order_release);
  return reinterpret_cast<MPI_Request>(raw);
}

bool NoChorusRequests() { return live_count.load(std::memory_order_acquire) == 0; }

bool IsChorusRequest(MPI_Request handle) {
  if (NoChorusRequests() || handle == MPI_REQUEST_NULL) return false;
  std::lock_guard<std::mutex> lock(registry_mutex);
  return registry->count(reinterpret_cast<const void*>(handle)) != 0;
}

int MarkChorusRequests(int count, const MPI_Request* requests, std::vector<char>* mine) {
  mine->assign(count > 0 ? static_cast<size_t>(count) : 0, 0);
  if (NoChorusRequests() || count <= 0 || requests == nullptr) return 0;
  int found = 0;
  std::lock_guard<std::mutex> lock(registry_mutex);
  for (int i = 0; i < count; ++i) {
    if (requests[i] != MPI_REQUEST_NULL && registry->count(reinterpret_cast<const void*>(requests[i])) != 0) {
      (*mine)[i] = 1;
      ++found;
    }
  }
  return found;
}

bool IsDone(MPI_Request handle) {
  Request* request = FromHandle(handle);
  return request->event == nullptr || chorusEventQuery(request->event) != chorusInProgress;
}

void EmptyStatus(MPI_Status* status) {
  if (status == MPI_STATUS_IGNORE) return;
  status->MPI_SOURCE = MPI_ANY_SOURCE;
  status->MPI_TAG = MPI_ANY_TAG;  // MPI_ERROR is left alone, as MPI_Wait does
  PMPI_Status_set_elements_x(status, MPI_BYTE, 0);
  PMPI_Status_set_cancelled(status, 0);
}

int Complete(MPI_Request* handle, MPI_Status* status) {
  Request* request = FromHandle(*handle);
  {
    std::lock_guard<std::mutex> lock(registry_mutex);
    registry->erase(request);
  }
  live_count.fetch_sub(1, std::memory_order_release);
  *handle = MPI_REQUEST_NULL;
  std::unique_ptr<Request> owned(request);
  chorusResult_t result = chorusSuccess;
  if (request->event != nullptr) {
    ProgressWatch watch;
    result = chorusEventSynchronize(request->event);
    chorusEventDestroy(request->event);
  }
  EmptyStatus(status);
  int rc = MPI_SUCCESS;
  if (result != chorusSuccess) {
    rc = RaiseError(request->comm, request->chorus_comm, result, CallName(request->call));
  } else if (request->needs_unpack) {
    rc = request->unpack.UnpackAll();
    if (rc != MPI_SUCCESS) PMPI_Comm_call_errhandler(request->comm, rc);
  }
  return rc;
}

}  // namespace chorus_mpi
