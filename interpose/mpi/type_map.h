// The one table that says which MPI datatypes and ops Chorus can serve.
//
// Data movement (Bcast, Allgather, Alltoall, Gather, Scatter) needs only the
// bytes: every predefined datatype whose elements are contiguous (size ==
// extent, no holes) moves as `size` bytes per element. Reductions need a
// Chorus element type: signed and unsigned integers of 1, 4 and 8 bytes,
// float and double, and the float/double complex types for MPI_SUM (as
// pairs of reals); ops MPI_SUM, MPI_PROD, MPI_MIN and MPI_MAX. Everything
// else (derived datatypes, 2-byte integers, bool, char, pair types, user
// ops, MPI_LAND, MPI_BAND, MPI_MAXLOC, ...) is not in the table.
#pragma once

#include <mpi.h>
#include <stddef.h>

#include "chorus/chorus.h"

namespace chorus_mpi {

struct TypeInfo {
  const char* name;          // "MPI_FLOAT"
  size_t size;               // bytes of one element
  bool reducible;            // has a Chorus element type for reductions
  chorusDataType_t chorus;   // the element type (valid when reducible)
  int lanes;                 // Chorus elements per MPI element (2 for complex)
  bool sum_only;             // complex: only MPI_SUM is elementwise
};

// The entry of a predefined contiguous datatype, or nullptr (derived
// datatypes, pair types, MPI_DATATYPE_NULL, types of size 0). Thread-safe;
// builds the table on first use (after MPI_Init).
const TypeInfo* LookupType(MPI_Datatype type);

struct Reduction {
  chorusDataType_t type;
  chorusRedOp_t op;
  int lanes;
};

// Maps (datatype, op) of a reduction. Returns nullptr and fills *out, or
// returns why Chorus cannot serve it ("user-defined op", "MPI_BAND", ...).
const char* MapReduction(MPI_Datatype type, MPI_Op op, Reduction* out);

// Name of a predefined op ("MPI_SUM"), "user-defined op" otherwise.
const char* OpName(MPI_Op op);

}  // namespace chorus_mpi
