// Fortran entry points. Open MPI's Fortran bindings (libmpi_mpifh for
// mpif.h and `use mpi`; libmpi_usempif08 for `use mpi_f08`, which calls
// the ompi_*_f functions of libmpi_mpifh) call PMPI_Allreduce etc. directly,
// never MPI_Allreduce, so interposing the C symbols does not reach Fortran
// programs. These definitions take the Fortran symbols instead: every name
// gfortran and other compilers use for mpif.h / `use mpi` (mpi_allreduce_,
// mpi_allreduce__, mpi_allreduce, MPI_ALLREDUCE) and the ompi_allreduce_f
// that `use mpi_f08` goes through. They convert the handles and Fortran's
// MPI_IN_PLACE / MPI_BOTTOM sentinels as Open MPI does and call the same
// code as the C entry points.
#include <mpi.h>

#include "interpose/mpi/collectives.h"

// Open MPI's Fortran sentinels (common blocks in libmpi). Weak: an MPI
// without one leaves its address null.
extern "C" {
extern int mpi_fortran_in_place_ __attribute__((weak));
extern int mpi_fortran_in_place __attribute__((weak));
extern int mpi_fortran_in_place__ __attribute__((weak));
extern int MPI_FORTRAN_IN_PLACE __attribute__((weak));
extern int mpi_fortran_bottom_ __attribute__((weak));
extern int mpi_fortran_bottom __attribute__((weak));
extern int mpi_fortran_bottom__ __attribute__((weak));
extern int MPI_FORTRAN_BOTTOM __attribute__((weak));
}

namespace {

bool Is(const void* address, const int* a, const int* b, const int* c, const int* d) {
  return address != nullptr && (address == a || address == b || address == c || address == d);
}

// Fortran buffer address -> C buffer argument.
const void* Buffer(const void* address) {
  if (Is(address, &mpi_fortran_in_place_, &mpi_fortran_in_place, &mpi_fortran_in_place__, &MPI_FORTRAN_IN_PLACE)) {
    return MPI_IN_PLACE;
  }
  if (Is(address, &mpi_fortran_bottom_, &mpi_fortran_bottom, &mpi_fortran_bottom__, &MPI_FORTRAN_BOTTOM)) {
    return MPI_BOTTOM;
  }
  return address;
}

void* MutableBuffer(void* address) { return const_cast<void*>(Buffer(address)); }

void SetError(MPI_Fint* ierr, int rc) {
  if (ierr != nullptr) *ierr = static_cast<MPI_Fint>(rc);
}

void Allreduce(void* sendbuf, void* recvbuf, MPI_Fint* count, MPI_Fint* datatype, MPI_Fint* op, MPI_Fint* comm,
               MPI_Fint* ierr) {
  SetError(ierr, chorus_mpi::Allreduce(Buffer(sendbuf), MutableBuffer(recvbuf), *count, PMPI_Type_f2c(*datatype),
                                       PMPI_Op_f2c(*op), PMPI_Comm_f2c(*comm)));
}

void Reduce(void* sendbuf, void* recvbuf, MPI_Fint* count, MPI_Fint* datatype, MPI_Fint* op, MPI_Fint* root,
            MPI_Fint* comm, MPI_Fint* ierr) {
  SetError(ierr, chorus_mpi::Reduce(Buffer(sendbuf), MutableBuffer(recvbuf), *count, PMPI_Type_f2c(*datatype),
                                    PMPI_Op_f2c(*op), *root, PMPI_Comm_f2c(*comm)));
}

void Bcast(void* buffer, MPI_Fint* count, MPI_Fint* datatype, MPI_Fint* root, MPI_Fint* comm, MPI_Fint* ierr) {
  SetError(ierr, chorus_mpi::Bcast(MutableBuffer(buffer), *count, PMPI_Type_f2c(*datatype), *root,
                                   PMPI_Comm_f2c(*comm)));
}

void Allgather(void* sendbuf, MPI_Fint* sendcount, MPI_Fint* sendtype, void* recvbuf, MPI_Fint* recvcount,
               MPI_Fint* recvtype, MPI_Fint* comm, MPI_Fint* ierr) {
  SetError(ierr, chorus_mpi::Allgather(Buffer(sendbuf), *sendcount, PMPI_Type_f2c(*sendtype), MutableBuffer(recvbuf),
                                       *recvcount, PMPI_Type_f2c(*recvtype), PMPI_Comm_f2c(*comm)));
}

void Barrier(MPI_Fint* comm, MPI_Fint* ierr) { SetError(ierr, chorus_mpi::Barrier(PMPI_Comm_f2c(*comm))); }

}  // namespace

// Every spelling of each entry point calls the one above.
#define CHORUS_MPI_FORTRAN(lower, upper, impl, params, args) \
  void lower##_ params { impl args; }                       \
  void lower##__ params { impl args; }                      \
  void lower params { impl args; }                          \
  void upper params { impl args; }

extern "C" {

#define ALLREDUCE_PARAMS \
  (void* s, void* r, MPI_Fint* n, MPI_Fint* t, MPI_Fint* o, MPI_Fint* c, MPI_Fint* e)
CHORUS_MPI_FORTRAN(mpi_allreduce, MPI_ALLREDUCE, Allreduce, ALLREDUCE_PARAMS, (s, r, n, t, o, c, e))
void ompi_allreduce_f ALLREDUCE_PARAMS { Allreduce(s, r, n, t, o, c, e); }

#define REDUCE_PARAMS \
  (void* s, void* r, MPI_Fint* n, MPI_Fint* t, MPI_Fint* o, MPI_Fint* root, MPI_Fint* c, MPI_Fint* e)
CHORUS_MPI_FORTRAN(mpi_reduce, MPI_REDUCE, Reduce, REDUCE_PARAMS, (s, r, n, t, o, root, c, e))
void ompi_reduce_f REDUCE_PARAMS { Reduce(s, r, n, t, o, root, c, e); }

#define BCAST_PARAMS (void* b, MPI_Fint* n, MPI_Fint* t, MPI_Fint* root, MPI_Fint* c, MPI_Fint* e)
CHORUS_MPI_FORTRAN(mpi_bcast, MPI_BCAST, Bcast, BCAST_PARAMS, (b, n, t, root, c, e))
void ompi_bcast_f BCAST_PARAMS { Bcast(b, n, t, root, c, e); }

#define ALLGATHER_PARAMS \
  (void* s, MPI_Fint* sn, MPI_Fint* st, void* r, MPI_Fint* rn, MPI_Fint* rt, MPI_Fint* c, MPI_Fint* e)
CHORUS_MPI_FORTRAN(mpi_allgather, MPI_ALLGATHER, Allgather, ALLGATHER_PARAMS, (s, sn, st, r, rn, rt, c, e))
void ompi_allgather_f ALLGATHER_PARAMS { Allgather(s, sn, st, r, rn, rt, c, e); }

#define BARRIER_PARAMS (MPI_Fint* c, MPI_Fint* e)
CHORUS_MPI_FORTRAN(mpi_barrier, MPI_BARRIER, Barrier, BARRIER_PARAMS, (c, e))
void ompi_barrier_f BARRIER_PARAMS { Barrier(c, e); }

}  // extern "C"
