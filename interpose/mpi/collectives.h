// The blocking collectives as plain functions, called by the C entry points
// (MPI_Allreduce, ...) and the Fortran ones (mpi_allreduce_, ...). Each
// returns an MPI error code, having raised errors through the
// communicator's error handler as MPI does.
#pragma once

#include <mpi.h>

namespace chorus_mpi {

int Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
int Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
           MPI_Comm comm);
int ReduceScatterBlock(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
                       MPI_Comm comm);
int Bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm);
int Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
              MPI_Datatype recvtype, MPI_Comm comm);
int Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
             MPI_Datatype recvtype, MPI_Comm comm);
int Gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
           MPI_Datatype recvtype, int root, MPI_Comm comm);
int Scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
            MPI_Datatype recvtype, int root, MPI_Comm comm);
int Barrier(MPI_Comm comm);

}  // namespace chorus_mpi
