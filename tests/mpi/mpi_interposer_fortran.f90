! A Fortran program (use mpi, i.e. libmpi_mpifh) for libchorus_mpi.so:
! Allreduce (out of place and MPI_IN_PLACE), Reduce, Bcast, Allgather and
! Barrier with Fortran datatypes, checked against closed-form results.
! Prints "fortran: N failed" on rank 0; stops with status 1 on a failure.
program mpi_interposer_fortran
  use mpi
  implicit none
  integer :: ierr, rank, nranks, i, k, failures, all_failures, root
  real :: r(100), rsum(100)
  double precision :: d(10)
  integer :: iv(50), ibuf(50)
  integer, allocatable :: gathered(:)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  failures = 0

  do i = 1, 100
    r(i) = real(mod(i + rank, 5))
  end do
  call MPI_Allreduce(r, rsum, 100, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (ierr /= MPI_SUCCESS) failures = failures + 1
  do i = 1, 100
    if (rsum(i) /= real(sum([(mod(i + k, 5), k = 0, nranks - 1)]))) failures = failures + 1
  end do

  do i = 1, 10
    d(i) = dble(rank * 10 + i)
  end do
  call MPI_Allreduce(MPI_IN_PLACE, d, 10, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
  if (ierr /= MPI_SUCCESS) failures = failures + 1
  do i = 1, 10
    if (d(i) /= dble((nranks - 1) * 10 + i)) failures = failures + 1
  end do

  do i = 1, 50
    iv(i) = rank + i
  end do
  root = nranks - 1
  ibuf = -1
  call MPI_Reduce(iv, ibuf, 50, MPI_INTEGER, MPI_SUM, root, MPI_COMM_WORLD, ierr)
  if (ierr /= MPI_SUCCESS) failures = failures + 1
  if (rank == root) then
    do i = 1, 50
      if (ibuf(i) /= nranks * i + nranks * (nranks - 1) / 2) failures = failures + 1
    end do
  end if

  if (rank == root) then
    ibuf = 7
  else
    ibuf = 0
  end if
  call MPI_Bcast(ibuf, 50, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
  if (ierr /= MPI_SUCCESS .or. any(ibuf /= 7)) failures = failures + 1

  allocate(gathered(2 * nranks))
  call MPI_Allgather(iv, 2, MPI_INTEGER, gathered, 2, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  if (ierr /= MPI_SUCCESS) failures = failures + 1
  do k = 0, nranks - 1
    if (gathered(2 * k + 1) /= k + 1 .or. gathered(2 * k + 2) /= k + 2) failures = failures + 1
  end do

  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (ierr /= MPI_SUCCESS) failures = failures + 1

  call MPI_Reduce(failures, all_failures, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a, i0, a)', 'fortran: ', all_failures, ' failed'
  deallocate(gathered)
  call MPI_Finalize(ierr)
  if (failures /= 0) stop 1
end program mpi_interposer_fortran
