/*
 * A user's program in plain C: the parent makes a unique id, forks one
 * process per rank, and each rank runs every call of chorus.h with exact
 * checks (c_api_rank_checks.c). The parent kills ranks still running at the
 * deadline.
 *
 * Usage: c_api_program NRANKS [DEADLINE_SECONDS]
 * Exit status: 0 when every rank passed, 1 when one failed or hung, 2 on
 * bad usage or set-up failure.
 */
#define _POSIX_C_SOURCE 200809L

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "chorus/chorus.h"
#include "tests/api/c_api_rank_checks.h"

static double SecondsNow(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

static void SleepMillis(long millis) {
  struct timespec pause;
  pause.tv_sec = millis / 1000;
  pause.tv_nsec = (millis % 1000) * 1000000L;
  nanosleep(&pause, NULL);
}

/* Prints how a finished rank ended; returns 1 unless it exited with 0. */
static int ReportEnd(int rank, int status) {
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
  if (WIFEXITED(status)) {
    fprintf(stderr, "c_api_program: rank %d exited with %d\n", rank, WEXITSTATUS(status));
  } else if (WIFSIGNALED(status)) {
    fprintf(stderr, "c_api_program: rank %d killed by signal %d\n", rank, WTERMSIG(status));
  }
  return 1;
}

/*
 * Waits for every rank until the deadline, then SIGKILLs and reaps the
 * rest. Returns the number of ranks that failed or hung.
 */
static int WaitForRanks(pid_t* pids, int nranks, double deadline_seconds) {
  const double give_up_at = SecondsNow() + deadline_seconds;
  int running = 0, failed = 0, rank, status;
  for (rank = 0; rank < nranks; ++rank) running += pids[rank] > 0;
  while (running > 0) {
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      for (rank = 0; rank < nranks; ++rank) {
        if (pids[rank] != pid) continue;
        failed += ReportEnd(rank, status);
        pids[rank] = 0;
        --running;
      }
      continue;
    }
    if (SecondsNow() >= give_up_at) break;
    SleepMillis(5);
  }
  for (rank = 0; rank < nranks; ++rank) {
    if (pids[rank] <= 0) continue;
    fprintf(stderr, "c_api_program: rank %d still running after %.0f s, killed\n", rank, deadline_seconds);
    kill(pids[rank], SIGKILL);
    waitpid(pids[rank], &status, 0);
    ++failed;
  }
  return failed;
}

int main(int argc, char** argv) {
  pid_t pids[C_API_MAX_RANKS];
  chorusUniqueId id;
  chorusResult_t result;
  int nranks, rank, failed;
  double deadline_seconds;

  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: %s NRANKS [DEADLINE_SECONDS]\n", argv[0]);
    return 2;
  }
  nranks = atoi(argv[1]);
  deadline_seconds = argc == 3 ? atof(argv[2]) : 60.0;
  if (nranks < 1 || nranks > C_API_MAX_RANKS || deadline_seconds <= 0) {
    fprintf(stderr, "c_api_program: NRANKS must be in [1, %d] and the deadline positive\n", C_API_MAX_RANKS);
    return 2;
  }

  result = chorusGetUniqueId(&id);
  if (result != chorusSuccess) {
    fprintf(stderr, "c_api_program: chorusGetUniqueId returned %s: %s\n", chorusGetErrorString(result),
            chorusGetLastError(NULL));
    return 2;
  }
  fflush(NULL); /* else every child would print the parent's buffered output */
  for (rank = 0; rank < nranks; ++rank) {
    pids[rank] = fork();
    if (pids[rank] == 0) {
      int code = RunRankChecks(&id, nranks, rank);
      fflush(NULL);
      _exit(code);
    }
    if (pids[rank] < 0) perror("c_api_program: fork"); /* counted as failed: never reaped */
  }
  failed = WaitForRanks(pids, nranks, deadline_seconds);
  for (rank = 0; rank < nranks; ++rank) failed += pids[rank] < 0;
  if (failed > 0) {
    fprintf(stderr, "c_api_program: %d of %d ranks failed\n", failed, nranks);
    return 1;
  }
  printf("c_api_program: %d ranks passed\n", nranks);
  return 0;
}
