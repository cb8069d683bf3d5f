// Where a call goes: Chorus or PMPI. Shared by the blocking, non-blocking
// and Fortran entry points.
#pragma once

#include <mpi.h>
#include <stddef.h>

#include "interpose/mpi/comm_registry.h"
#include "interpose/mpi/report.h"

namespace chorus_mpi {

// Bytes of `count` elements of `type`, for the statistics (0 when unknown).
size_t PayloadBytes(long long count, MPI_Datatype type);

// Decides where a call goes. `reason` is why the arguments alone rule
// Chorus out (nullptr if they do not); then the communicator decides
// (created on first use), then the root when shape.has_root. Counts and
// logs the call. Returns the entry to run it on, or nullptr: pass to PMPI.
// Every input is one that every rank of `comm` passes alike.
CommEntry* Route(Call call, MPI_Comm comm, const Shape& shape, const char* reason, size_t bytes);

}  // namespace chorus_mpi
