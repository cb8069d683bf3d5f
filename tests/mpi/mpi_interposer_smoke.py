"""mpi4py through libchorus_mpi.so: buffer collectives (Allreduce,
Bcast, Iallreduce + Wait, Barrier) against closed-form results.
Prints "mpi4py: ok" on rank 0, exits with 1 on a wrong result."""
import array
import sys

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
n = 1000
send = array.array("d", [float(i + rank) for i in range(n)])
recv = array.array("d", [0.0] * n)
comm.Allreduce(send, recv, op=MPI.SUM)
ok = all(recv[i] == size * i + size * (size - 1) / 2 for i in range(n))

data = array.array("i", [rank] * 64)
comm.Bcast(data, root=size - 1)
ok = ok and all(x == size - 1 for x in data)

recv = array.array("d", [0.0] * n)
request = comm.Iallreduce(send, recv, op=MPI.MAX)
request.Wait()
ok = ok and all(recv[i] == i + size - 1 for i in range(n))
comm.Barrier()

everyone = comm.allreduce(1 if ok else 0, op=MPI.MIN)
if rank == 0:
    print("mpi4py: ok" if everyone else "mpi4py: WRONG RESULTS")
sys.exit(0 if ok else 1)
