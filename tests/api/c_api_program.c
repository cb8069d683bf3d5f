/*
 * A user's program in plain C: the parent forks one process per rank, rank 0
 * makes the unique id and hands it to the others through pipes, and each
 * rank runs every call of chorus.h with exact checks (c_api_rank_checks.c).
 * The parent kills ranks still running at the deadline.
 *
 * The parent forks before any chorus call: chorusGetUniqueId starts the
 * rendezvous root's thread, and a process forked while another thread holds
 * a lock (an allocator's, under AddressSanitizer) keeps that lock held.
 *
 * Usage: c_api_program NRANKS [DEADLINE_SECONDS]
 * Exit status: 0 when every rank passed, 1 when one failed or hung, 2 on
 * bad usage or set-up failure.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
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

/* Writes all of `bytes`; returns 0 on success. */
static int WriteAll(int fd, const void* data, size_t bytes) {
  const char* next = (const char*)data;
  while (bytes > 0) {
    ssize_t put = write(fd, next, bytes);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return -1;
    next += put;
    bytes -= (size_t)put;
  }
  return 0;
}

/* Reads all of `bytes`; returns 0 on success, -1 on EOF or error. */
static int ReadAll(int fd, void* data, size_t bytes) {
  char* next = (char*)data;
  while (bytes > 0) {
    ssize_t got = read(fd, next, bytes);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return -1;
    next += got;
    bytes -= (size_t)got;
  }
  return 0;
}

/*
 * One rank's process: rank 0 makes the id and writes it to the other ranks'
 * pipes; the others read it (EOF when rank 0 failed: exit 2). Only rank 0
 * keeps the pipes' write ends, so a reader never waits on a dead writer.
 */
static int RunRank(int nranks, int rank, int id_pipes[][2]) {
  chorusUniqueId id;
  int other;
  for (other = 1; other < nranks; ++other) {
    if (other != rank) close(id_pipes[other][0]);
    if (rank != 0) close(id_pipes[other][1]);
  }
  if (rank == 0) {
    chorusResult_t result = chorusGetUniqueId(&id);
    if (result != chorusSuccess) {
      fprintf(stderr, "c_api_program: chorusGetUniqueId returned %s: %s\n", chorusGetErrorString(result),
              chorusGetLastError(NULL));
      return 2;
    }
    for (other = 1; other < nranks; ++other) {
      if (WriteAll(id_pipes[other][1], &id, sizeof(id)) != 0) perror("c_api_program: sending the id");
      close(id_pipes[other][1]);
    }
  } else if (ReadAll(id_pipes[rank][0], &id, sizeof(id)) != 0) {
    fprintf(stderr, "c_api_program: rank %d got no id from rank 0\n", rank);
    return 2;
  }
  return RunRankChecks(&id, nranks, rank);
}

int main(int argc, char** argv) {
  pid_t pids[C_API_MAX_RANKS];
  int id_pipes[C_API_MAX_RANKS][2];
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

  for (rank = 1; rank < nranks; ++rank) {
    if (pipe(id_pipes[rank]) != 0) {
      perror("c_api_program: pipe");
      return 2;
    }
  }
  fflush(NULL); /* else every child would print the parent's buffered output */
  for (rank = 0; rank < nranks; ++rank) {
    pids[rank] = fork();
    if (pids[rank] == 0) {
      int code = RunRank(nranks, rank, id_pipes);
      fflush(NULL);
      _exit(code);
    }
    if (pids[rank] < 0) perror("c_api_program: fork"); /* counted as failed: never reaped */
  }
  for (rank = 1; rank < nranks; ++rank) {
    close(id_pipes[rank][0]);
    close(id_pipes[rank][1]);
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
