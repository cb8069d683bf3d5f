! A Fortran 2008 program (use mpi_f08, i.e. libmpi_usempif08, which calls
! Open MPI's ompi_*_f functions) for libchorus_mpi.so: Allreduce in place,
! Bcast and Barrier. Prints "f08: N failed" on rank 0.
program mpi_interposer_f08
  use mpi_f08
  implicit none
  integer :: rank, nranks, i, failures, all_failures
  double precision :: d(64)
  integer :: ibuf(16)

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  failures = 0

  do i = 1, 64
    d(i) = dble(i + rank)
  end do
  call MPI_Allreduce(MPI_IN_PLACE, d, 64, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
  do i = 1, 64
    if (d(i) /= dble(nranks * i + nranks * (nranks - 1) / 2)) failures = failures + 1
  end do

  ibuf = rank
  call MPI_Bcast(ibuf, 16, MPI_INTEGER, 0, MPI_COMM_WORLD)
  if (any(ibuf /= 0)) failures = failures + 1
  call MPI_Barrier(MPI_COMM_WORLD)

  call MPI_Reduce(failures, all_failures, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD)
  if (rank == 0) print '(a, i0, a)', 'f08: ', all_failures, ' failed'
  call MPI_Finalize()
  if (failures /= 0) stop 1
end program mpi_interposer_f08
