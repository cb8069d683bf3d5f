/* MPI_Allreduce with and without libchorus_mpi.so, in one run.
 *
 *   mpirun -np 4 -x LD_PRELOAD=<build>/interpose/mpi/libchorus_mpi.so \
 *       <build>/perf/mpi_interposer/allreduce_interposer_bench -b 8 -e 64M -f 4 -r 7
 *
 * Under the interposer MPI_Allreduce runs on Chorus while PMPI_Allreduce is
 * Open MPI's own, so the program times both in the same processes at the
 * same moments: for every size and repeat, one timed loop of each (their
 * order alternating between repeats), after a warm-up of both. A loop's time
 * is the slowest rank's average per call (barrier before each loop). Prints
 * per size the median over the repeats of each, and their ratio
 * open_mpi_us / chorus_us (above 1: the interposer is faster). float32 sum,
 * out of place; every result is checked (exit status 1 when one is wrong).
 * Without the interposer both columns are Open MPI (the header says so).
 *
 * Flags: -b min -e max (K/M/G suffixes), -f factor, -r repeats (odd is
 * best for a median), -n iterations for the smallest size (fewer for large
 * sizes: about 64 MiB moved per loop, at least 3).
 *
 * -F measures instead what the interposer adds to a call it passes to Open
 * MPI: an 8-byte MPI_Allreduce on MPI_COMM_SELF (which Chorus never serves)
 * against PMPI_Allreduce on it, -n calls per loop (default 200000), loops
 * alternating, median per call over -r repeats, on every rank at once. */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf/peers/bench_args.h"

typedef int (*AllreduceFn)(const void*, void*, int, MPI_Datatype, MPI_Op, MPI_Comm);

static int CompareDoubles(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static double Median(double* values, int n) {
  qsort(values, (size_t)n, sizeof(double), CompareDoubles);
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

/* The slowest rank's microseconds per call of `iters` calls. */
static double TimeLoop(AllreduceFn fn, const float* send, float* recv, int count, int iters) {
  PMPI_Barrier(MPI_COMM_WORLD);
  const double start = PMPI_Wtime();
  for (int i = 0; i < iters; ++i) fn(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  double local = (PMPI_Wtime() - start) * 1e6 / iters, slowest = 0;
  PMPI_Allreduce(&local, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

/* Nanoseconds per call of `iters` 8-byte allreduces on MPI_COMM_SELF. */
static double TimeSelfLoop(AllreduceFn fn, int iters) {
  double in = 1.0, out = 0.0;
  const double start = PMPI_Wtime();
  for (int i = 0; i < iters; ++i) fn(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_SELF);
  return (PMPI_Wtime() - start) * 1e9 / iters;
}

/* The -F mode: the interposer's cost on a call that falls back. */
static int MeasureFallbackOverhead(int rank, int repeats, int iters, int interposed) {
  double* through = malloc((size_t)repeats * sizeof(double));
  double* direct = malloc((size_t)repeats * sizeof(double));
  double* added = malloc((size_t)repeats * sizeof(double));
  if (!through || !direct || !added) PMPI_Abort(MPI_COMM_WORLD, 1);
  TimeSelfLoop(MPI_Allreduce, iters / 10 + 1);  /* warm-up */
  TimeSelfLoop(PMPI_Allreduce, iters / 10 + 1);
  for (int r = 0; r < repeats; ++r) {
    if (r % 2 == 0) {
      through[r] = TimeSelfLoop(MPI_Allreduce, iters);
      direct[r] = TimeSelfLoop(PMPI_Allreduce, iters);
    } else {
      direct[r] = TimeSelfLoop(PMPI_Allreduce, iters);
      through[r] = TimeSelfLoop(MPI_Allreduce, iters);
    }
    added[r] = through[r] - direct[r];
  }
  if (rank == 0) {
    printf("# fall-back overhead: 8-byte MPI_Allreduce on MPI_COMM_SELF, %d calls x %d repeats; %s\n", iters,
           repeats, interposed ? "through libchorus_mpi.so" : "NOT INTERPOSED (both direct)");
    printf("# %14s %14s %14s\n", "direct_ns", "interposed_ns", "added_ns");
    const double d = Median(direct, repeats), t = Median(through, repeats), a = Median(added, repeats);
    printf("  %14.1f %14.1f %14.1f\n", d, t, a);
  }
  free(through);
  free(direct);
  free(added);
  MPI_Finalize();
  return 0;
}

static long Wrong(const float* recv, int count, int nranks) {
  long wrong = 0;
  for (int i = 0; i < count; ++i) {
    wrong += recv[i] != (float)((i % 13) * nranks + nranks * (nranks - 1) / 2);
  }
  return wrong;
}

int main(int argc, char** argv) {
  size_t min_bytes = 8, max_bytes = 64 << 20, factor = 4;
  int repeats = 5, base_iters = 1000, opt = 0, fallback = 0, iters_given = 0;
  while ((opt = getopt(argc, argv, "b:e:f:r:n:F")) != -1) {
    switch (opt) {
      case 'b': if (!ParseBenchSize(optarg, &min_bytes)) return 2; break;
      case 'e': if (!ParseBenchSize(optarg, &max_bytes)) return 2; break;
      case 'f': if (!ParseBenchSize(optarg, &factor) || factor < 2) return 2; break;
      case 'r': repeats = atoi(optarg); break;
      case 'n': base_iters = atoi(optarg); iters_given = 1; break;
      case 'F': fallback = 1; break;
      default:
        fprintf(stderr, "usage: %s [-b min] [-e max] [-f factor] [-r repeats] [-n iters] [-F]\n", argv[0]);
        return 2;
    }
  }
  min_bytes -= min_bytes % sizeof(float);
  max_bytes -= max_bytes % sizeof(float);
  if (repeats < 1 || base_iters < 1 || min_bytes < sizeof(float) || min_bytes > max_bytes) return 2;
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  /* In libmpi MPI_Allreduce is an alias of PMPI_Allreduce; the interposer's is not. */
  const int interposed = dlsym(RTLD_DEFAULT, "MPI_Allreduce") != dlsym(RTLD_DEFAULT, "PMPI_Allreduce");
  if (fallback) return MeasureFallbackOverhead(rank, repeats, iters_given ? base_iters : 200000, interposed);
  const size_t max_count = max_bytes / sizeof(float);
  float* send = malloc(max_count * sizeof(float));
  float* recv = malloc(max_count * sizeof(float));
  double* chorus_us = malloc((size_t)repeats * sizeof(double));
  double* ompi_us = malloc((size_t)repeats * sizeof(double));
  if (!send || !recv || !chorus_us || !ompi_us) PMPI_Abort(MPI_COMM_WORLD, 1);
  for (size_t i = 0; i < max_count; ++i) send[i] = (float)((i % 13) + (size_t)rank);
  if (rank == 0) {
    printf("# MPI_Allreduce float32 sum, %d ranks, %d repeats; chorus column: %s\n", nranks, repeats,
           interposed ? "MPI_Allreduce through libchorus_mpi.so" : "NOT INTERPOSED (Open MPI too)");
    printf("# %10s %7s %12s %12s %9s\n", "bytes", "iters", "open_mpi_us", "chorus_us", "ratio");
  }
  long wrong = 0;
  for (size_t bytes = min_bytes;; bytes = bytes > max_bytes / factor ? max_bytes : bytes * factor) {
    const int count = (int)(bytes / sizeof(float));
    int iters = (int)((64u << 20) / bytes);
    if (iters > base_iters) iters = base_iters;
    if (iters < 3) iters = 3;
    TimeLoop(MPI_Allreduce, send, recv, count, 2);  /* warm-up, and the Chorus communicator */
    TimeLoop(PMPI_Allreduce, send, recv, count, 2);
    for (int r = 0; r < repeats; ++r) {
      memset(recv, 0, (size_t)count * sizeof(float));
      if (r % 2 == 0) {
        chorus_us[r] = TimeLoop(MPI_Allreduce, send, recv, count, iters);
        wrong += Wrong(recv, count, nranks);
        ompi_us[r] = TimeLoop(PMPI_Allreduce, send, recv, count, iters);
        wrong += Wrong(recv, count, nranks);
      } else {
        ompi_us[r] = TimeLoop(PMPI_Allreduce, send, recv, count, iters);
        wrong += Wrong(recv, count, nranks);
        chorus_us[r] = TimeLoop(MPI_Allreduce, send, recv, count, iters);
        wrong += Wrong(recv, count, nranks);
      }
    }
    const double ompi = Median(ompi_us, repeats), chorus = Median(chorus_us, repeats);
    if (rank == 0) printf("%12zu %7d %12.2f %12.2f %9.2f\n", bytes, iters, ompi, chorus, ompi / chorus);
    fflush(stdout);
    if (bytes == max_bytes) break;  /* the last size is -e, also off the progression */
  }
  long all_wrong = 0;
  PMPI_Allreduce(&wrong, &all_wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("# wrong elements: %ld\n", all_wrong);
  free(send);
  free(recv);
  free(chorus_us);
  free(ompi_us);
  MPI_Finalize();
  return all_wrong == 0 ? 0 : 1;
}
