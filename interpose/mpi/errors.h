// Chorus failures as MPI errors: an error code of class MPI_ERR_OTHER whose
// MPI_Error_string names the Chorus result, raised through the MPI
// communicator's error handler (MPI_ERRORS_ARE_FATAL aborts, as MPI would;
// MPI_ERRORS_RETURN returns the code).
#pragma once

#include <mpi.h>

#include "chorus/chorus.h"

namespace chorus_mpi {

// The MPI error code for `result` (MPI_SUCCESS for chorusSuccess).
int ErrorCode(chorusResult_t result);

// Logs the failure of `call` once per communicator with Chorus's message,
// then calls `comm`'s error handler. Returns the code to return from the call.
int RaiseError(MPI_Comm comm, chorusComm_t chorus_comm, chorusResult_t result, const char* call);

}  // namespace chorus_mpi
