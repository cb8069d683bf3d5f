// Requests of the non-blocking calls Chorus serves (MPI_Iallreduce,
// MPI_Ibcast): an operation on the communicator's Chorus host stream with a
// chorusEvent recorded after it.
//
// The program holds them as MPI_Request values (Open MPI's MPI_Request is a
// pointer; ours point to Request objects). Every call that takes requests
// (MPI_Wait, MPI_Test, MPI_Waitall, ...) asks IsChorusRequest, a registry of
// the live ones, and hands every other request to PMPI_ unchanged. While no
// Chorus request is alive the check is one atomic load.
#pragma once

#include <mpi.h>

#include <memory>
#include <vector>

#include "chorus/chorus.h"
#include "interpose/mpi/byte_view.h"
#include "interpose/mpi/report.h"

namespace chorus_mpi {

struct Request {
  chorusEvent_t event = nullptr;  // nullptr: already complete
  MPI_Comm comm = MPI_COMM_NULL;  // whose error handler reports a failure
  chorusComm_t chorus_comm = nullptr;
  Call call = Call::kIallreduce;
  ByteView unpack;                // staged receive buffer to unpack when done
  bool needs_unpack = false;
};

// Registers `request` and returns its handle.
MPI_Request Publish(std::unique_ptr<Request> request);

// Whether `handle` is a live Chorus request.
bool IsChorusRequest(MPI_Request handle);
// True when no Chorus request is alive (the fast path of every wait).
bool NoChorusRequests();

// Marks (mine[i] = 1) which of requests[0..count) are Chorus requests;
// returns how many.
int MarkChorusRequests(int count, const MPI_Request* requests, std::vector<char>* mine);

// Whether the operation has run (does not complete the request).
bool IsDone(MPI_Request handle);

// Waits for the operation, unpacks, fills *status (may be
// MPI_STATUS_IGNORE), frees the request and sets *handle to
// MPI_REQUEST_NULL. Returns the MPI error code (raised through the error
// handler when the operation failed).
int Complete(MPI_Request* handle, MPI_Status* status);

// The status MPI gives a completed collective request.
void EmptyStatus(MPI_Status* status);

}  // namespace chorus_mpi
