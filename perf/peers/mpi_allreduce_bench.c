/* Open MPI's MPI_Allreduce (float32 sum, out of place) timed the way
 * all_reduce_perf times chorus, so that perf/compare can put the two side by
 * side: the same -b -e -f -n -w flags, the same busbw = 2(n-1)/n * bytes /
 * time, the time of one call averaged over the iterations and the ranks.
 *
 * Output, rank 0 only: comment lines starting with '#', then one line per
 * size: "<bytes> <time_us> <busbw GB/s> <wrong elements>".
 * Exit code 1 when any result is wrong, 2 on bad flags. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf/peers/bench_args.h"

/* Small integers whose sum over any number of ranks is exact in float32,
 * whatever order the reduction takes. */
static float InputValue(size_t index, int rank) { return (float)((index % 13) + (size_t)rank); }

static float ExpectedSum(size_t index, int nranks) {
  return (float)((index % 13) * (size_t)nranks + (size_t)nranks * (size_t)(nranks - 1) / 2);
}

int main(int argc, char** argv) {
  BenchArgs args;
  if (!ParseBenchArgs(argc, argv, &args)) {
    fprintf(stderr, "usage: %s %s\n", argv[0], BenchUsage());
    return 2;
  }
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);

  const size_t max_count = args.max_bytes / sizeof(float);
  float* send = malloc((max_count ? max_count : 1) * sizeof(float));
  float* recv = malloc((max_count ? max_count : 1) * sizeof(float));
  if (send == NULL || recv == NULL) {
    fprintf(stderr, "rank %d: cannot allocate %zu bytes\n", rank, 2 * args.max_bytes);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (size_t i = 0; i < max_count; ++i) send[i] = InputValue(i, rank);

  if (rank == 0) {
    printf("# mpi_allreduce_bench: MPI_Allreduce float sum, %d ranks, %d iters, %d warmup\n", nranks, args.iters,
           args.warmup_iters);
    printf("# bytes time_us busbw_gbps wrong\n");
  }
  long long total_wrong = 0;
  for (size_t bytes = args.min_bytes; bytes <= args.max_bytes; bytes = NextBenchSize(&args, bytes)) {
    const int count = (int)(bytes / sizeof(float));
    for (int i = 0; i < args.warmup_iters; ++i) {
      MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
    memset(recv, 0, (size_t)count * sizeof(float));
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    for (int i = 0; i < args.iters; ++i) {
      MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
    const double local_us = (MPI_Wtime() - start) * 1e6 / args.iters;

    long long wrong = 0;
    for (int i = 0; i < count; ++i) wrong += recv[i] != ExpectedSum((size_t)i, nranks);
    double sum_us = 0;
    long long all_wrong = 0;
    MPI_Reduce(&local_us, &sum_us, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&wrong, &all_wrong, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      const double time_us = sum_us / nranks;
      printf("%zu %.2f %.6f %lld\n", bytes, time_us, BusBandwidthGBps(bytes, time_us, nranks), all_wrong);
      fflush(stdout);
    }
    total_wrong += all_wrong;
  }
  free(send);
  free(recv);
  MPI_Finalize();
  return total_wrong == 0 ? 0 : 1;
}
