/* An unmodified MPI program that does MPI_Allreduce in a loop and checks
 * every result, for libchorus_mpi.so under real launchers (mpirun, srun)
 * and for what happens when a rank dies mid-run.
 *
 * Usage: mpi_allreduce_loop [--iterations N] [--count C]
 *                           [--kill-rank R --kill-at I] [--errors-return]
 *   --iterations N   allreduces to run (default 200)
 *   --count C        floats per allreduce (default 1024)
 *   --kill-rank R    rank R sends itself SIGKILL just before allreduce #I
 *   --kill-at I      (--kill-at 0: before the first one)
 *   --errors-return  MPI_ERRORS_RETURN on MPI_COMM_WORLD: this program
 *                    reports a failed call and exits with status 3, instead
 *                    of MPI_ERRORS_ARE_FATAL aborting the job
 *
 * Rank r contributes r + 1 + i at allreduce #i, so every element must be
 * n(n+1)/2 + n*i (exact in float for the sizes used). Prints "rank R pid P"
 * per rank, "rank R: killing itself (SIGKILL) before allreduce #I",
 * "rank R: MPI_Allreduce #I failed: <MPI error string>" and, on rank 0,
 * "mpi_allreduce_loop: N allreduces of C floats on P ranks, W wrong".
 * Exit status 0 when every result was right. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
  long iterations;
  long count;
  int kill_rank;
  long kill_at;
  int errors_return;
} Options;

static int ParseOptions(int argc, char** argv, Options* options) {
  options->iterations = 200;
  options->count = 1024;
  options->kill_rank = -1;
  options->kill_at = -1;
  options->errors_return = 0;
  for (int i = 1; i < argc; ++i) {
    const char* flag = argv[i];
    if (strcmp(flag, "--errors-return") == 0) {
      options->errors_return = 1;
      continue;
    }
    if (i + 1 >= argc) return 0;
    char* end = NULL;
    const long value = strtol(argv[++i], &end, 10);
    if (*end != '\0' || value < 0) return 0;
    if (strcmp(flag, "--iterations") == 0) {
      options->iterations = value;
    } else if (strcmp(flag, "--count") == 0) {
      options->count = value;
    } else if (strcmp(flag, "--kill-rank") == 0) {
      options->kill_rank = (int)value;
    } else if (strcmp(flag, "--kill-at") == 0) {
      options->kill_at = value;
    } else {
      return 0;
    }
  }
  return options->count > 0 && (options->kill_rank < 0) == (options->kill_at < 0);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  Options options;
  if (!ParseOptions(argc, argv, &options)) {
    if (rank == 0) {
      fprintf(stderr, "usage: %s [--iterations N] [--count C] [--kill-rank R --kill-at I] [--errors-return]\n",
              argv[0]);
    }
    MPI_Finalize();
    return 2;
  }
  if (options.errors_return) MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  printf("rank %d pid %d\n", rank, (int)getpid());
  fflush(stdout);

  float* values = malloc(sizeof(float) * (size_t)options.count);
  if (values == NULL) {
    fprintf(stderr, "rank %d: out of memory for %ld floats\n", rank, options.count);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  long wrong = 0;
  for (long i = 0; i < options.iterations; ++i) {
    if (rank == options.kill_rank && i == options.kill_at) {
      printf("rank %d: killing itself (SIGKILL) before allreduce #%ld\n", rank, i);
      fflush(stdout);
      raise(SIGKILL);
    }
    for (long k = 0; k < options.count; ++k) values[k] = (float)(rank + 1 + i);
    const int rc = MPI_Allreduce(MPI_IN_PLACE, values, (int)options.count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) {
      char text[MPI_MAX_ERROR_STRING];
      int length = 0;
      MPI_Error_string(rc, text, &length);
      printf("rank %d: MPI_Allreduce #%ld failed: %s\n", rank, i, text);
      fflush(stdout);
      /* A peer is gone: MPI_Finalize would wait for it, and MPI_Abort
       * could kill the other survivors before they report. */
      _exit(3);
    }
    const float expected = (float)size * (size + 1) / 2 + (float)size * i;
    for (long k = 0; k < options.count; ++k) wrong += values[k] != expected;
  }
  long wrong_total = 0;
  MPI_Allreduce(&wrong, &wrong_total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("mpi_allreduce_loop: %ld allreduces of %ld floats on %d ranks, %ld wrong\n", options.iterations,
           options.count, size, wrong_total);
  }
  free(values);
  MPI_Finalize();
  return wrong_total == 0 ? 0 : 1;
}
