// MPI_Wait, MPI_Test and their array forms, MPI_Request_free,
// MPI_Request_get_status and MPI_Cancel: Chorus requests are completed
// here, every other request goes to PMPI_ unchanged. Arrays that mix both
// kinds hand PMPI_ a copy in which the Chorus requests are
// MPI_REQUEST_NULL, and copy its results back. PMPI_ requests are waited
// for first: a Chorus operation completes without MPI's progress engine,
// while the PMPI_ ones may need this rank inside MPI.
#include <mpi.h>
#include <sched.h>

#include <vector>

#include "interpose/mpi/requests.h"

using chorus_mpi::Complete;
using chorus_mpi::IsChorusRequest;
using chorus_mpi::IsDone;
using chorus_mpi::MarkChorusRequests;

namespace {

MPI_Status* At(MPI_Status* statuses, int i) { return statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i]; }

// `requests` with the Chorus ones (mine) replaced by MPI_REQUEST_NULL.
std::vector<MPI_Request> PmpiCopy(int count, const MPI_Request* requests, const std::vector<char>& mine) {
  std::vector<MPI_Request> copy(requests, requests + count);
  for (int i = 0; i < count; ++i) {
    if (mine[i]) copy[i] = MPI_REQUEST_NULL;
  }
  return copy;
}

void CopyBack(int count, const std::vector<MPI_Request>& copy, MPI_Request* requests, const std::vector<char>& mine) {
  for (int i = 0; i < count; ++i) {
    if (!mine[i]) requests[i] = copy[i];
  }
}

// The array forms report per-request errors through MPI_ERR_IN_STATUS.
int ArrayResult(int pmpi_rc, const std::vector<int>& errors, int count, MPI_Status* statuses,
                const std::vector<char>& mine) {
  bool failed = pmpi_rc != MPI_SUCCESS;
  for (int i = 0; i < count; ++i) failed = failed || (mine[i] && errors[i] != MPI_SUCCESS);
  if (!failed) return MPI_SUCCESS;
  if (statuses != MPI_STATUSES_IGNORE) {
    for (int i = 0; i < count; ++i) {
      if (mine[i]) statuses[i].MPI_ERROR = errors[i];
      else if (pmpi_rc != MPI_ERR_IN_STATUS) statuses[i].MPI_ERROR = pmpi_rc;
    }
  }
  return MPI_ERR_IN_STATUS;
}

}  // namespace

extern "C" {

int MPI_Wait(MPI_Request* request, MPI_Status* status) {
  if (request == nullptr || !IsChorusRequest(*request)) return PMPI_Wait(request, status);
  return Complete(request, status);
}

int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  if (request == nullptr || !IsChorusRequest(*request)) return PMPI_Test(request, flag, status);
  *flag = IsDone(*request);
  return *flag ? Complete(request, status) : MPI_SUCCESS;
}

int MPI_Request_free(MPI_Request* request) {
  if (request == nullptr || !IsChorusRequest(*request)) return PMPI_Request_free(request);
  // The operation must still finish (and a staged broadcast be unpacked).
  return Complete(request, MPI_STATUS_IGNORE);
}

int MPI_Request_get_status(MPI_Request request, int* flag, MPI_Status* status) {
  if (!IsChorusRequest(request)) return PMPI_Request_get_status(request, flag, status);
  *flag = IsDone(request);
  if (*flag) chorus_mpi::EmptyStatus(status);
  return MPI_SUCCESS;
}

int MPI_Cancel(MPI_Request* request) {
  // A collective cannot be cancelled (MPI: erroneous); it completes normally.
  if (request == nullptr || !IsChorusRequest(*request)) return PMPI_Cancel(request);
  return MPI_SUCCESS;
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
  std::vector<char> mine;
  if (MarkChorusRequests(count, requests, &mine) == 0) return PMPI_Waitall(count, requests, statuses);
  std::vector<MPI_Request> copy = PmpiCopy(count, requests, mine);
  const int pmpi_rc = PMPI_Waitall(count, copy.data(), statuses);
  CopyBack(count, copy, requests, mine);
  std::vector<int> errors(count, MPI_SUCCESS);
  for (int i = 0; i < count; ++i) {
    if (mine[i]) errors[i] = Complete(&requests[i], At(statuses, i));
  }
  return ArrayResult(pmpi_rc, errors, count, statuses, mine);
}

int MPI_Testall(int count, MPI_Request requests[], int* flag, MPI_Status statuses[]) {
  std::vector<char> mine;
  if (MarkChorusRequests(count, requests, &mine) == 0) return PMPI_Testall(count, requests, flag, statuses);
  // All or nothing: while a Chorus request is pending, nothing is completed.
  *flag = 0;
  for (int i = 0; i < count; ++i) {
    if (mine[i] && !IsDone(requests[i])) return MPI_SUCCESS;
  }
  std::vector<MPI_Request> copy = PmpiCopy(count, requests, mine);
  const int pmpi_rc = PMPI_Testall(count, copy.data(), flag, statuses);
  if (!*flag) return pmpi_rc;
  CopyBack(count, copy, requests, mine);
  std::vector<int> errors(count, MPI_SUCCESS);
  for (int i = 0; i < count; ++i) {
    if (mine[i]) errors[i] = Complete(&requests[i], At(statuses, i));
  }
  return ArrayResult(pmpi_rc, errors, count, statuses, mine);
}

// One pass of Waitany: a finished Chorus request, else PMPI_Testany.
// Returns true when something completed (or nothing is active).
static bool TryAny(int count, MPI_Request requests[], const std::vector<char>& mine, int* index, MPI_Status* status,
                   int* rc) {
  std::vector<MPI_Request> copy = PmpiCopy(count, requests, mine);
  int flag = 0;
  *rc = PMPI_Testany(count, copy.data(), index, &flag, status);
  if (*rc != MPI_SUCCESS || (flag && *index != MPI_UNDEFINED)) {
    CopyBack(count, copy, requests, mine);
    return true;
  }
  for (int i = 0; i < count; ++i) {
    if (mine[i] && IsDone(requests[i])) {
      *index = i;
      *rc = Complete(&requests[i], status);
      return true;
    }
  }
  return false;
}

int MPI_Waitany(int count, MPI_Request requests[], int* index, MPI_Status* status) {
  std::vector<char> mine;
  if (MarkChorusRequests(count, requests, &mine) == 0) return PMPI_Waitany(count, requests, index, status);
  int rc = MPI_SUCCESS;
  while (!TryAny(count, requests, mine, index, status, &rc)) sched_yield();
  return rc;
}

int MPI_Testany(int count, MPI_Request requests[], int* index, int* flag, MPI_Status* status) {
  std::vector<char> mine;
  if (MarkChorusRequests(count, requests, &mine) == 0) return PMPI_Testany(count, requests, index, flag, status);
  int rc = MPI_SUCCESS;
  *flag = TryAny(count, requests, mine, index, status, &rc);
  if (!*flag) *index = MPI_UNDEFINED;
  return rc;
}

// One pass of Waitsome: PMPI_Testsome on the others, then every finished
// Chorus request. Returns how many completed (MPI_UNDEFINED: none active).
static int TrySome(int incount, MPI_Request requests[], const std::vector<char>& mine, int indices[],
                   MPI_Status statuses[], int* rc) {
  std::vector<MPI_Request> copy = PmpiCopy(incount, requests, mine);
  int outcount = 0;
  *rc = PMPI_Testsome(incount, copy.data(), &outcount, indices, statuses);
  CopyBack(incount, copy, requests, mine);
  if (outcount == MPI_UNDEFINED) outcount = 0;
  for (int i = 0; i < incount; ++i) {
    if (mine[i] && requests[i] != MPI_REQUEST_NULL && IsDone(requests[i])) {
      const int error = Complete(&requests[i], At(statuses, outcount));
      if (error != MPI_SUCCESS) {
        if (statuses != MPI_STATUSES_IGNORE) statuses[outcount].MPI_ERROR = error;
        *rc = MPI_ERR_IN_STATUS;
      }
      indices[outcount++] = i;
    }
  }
  return outcount;
}

int MPI_Waitsome(int incount, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[]) {
  std::vector<char> mine;
  if (MarkChorusRequests(incount, requests, &mine) == 0) {
    return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
  }
  int rc = MPI_SUCCESS;
  while ((*outcount = TrySome(incount, requests, mine, indices, statuses, &rc)) == 0 && rc == MPI_SUCCESS) {
    sched_yield();
  }
  return rc;
}

int MPI_Testsome(int incount, MPI_Request requests[], int* outcount, int indices[], MPI_Status statuses[]) {
  std::vector<char> mine;
  if (MarkChorusRequests(incount, requests, &mine) == 0) {
    return PMPI_Testsome(incount, requests, outcount, indices, statuses);
  }
  int rc = MPI_SUCCESS;
  *outcount = TrySome(incount, requests, mine, indices, statuses, &rc);
  return rc;
}

}  // extern "C"
