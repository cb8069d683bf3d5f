/*
 * One rank of c_api_program. Inputs are small integers (or halves of them)
 * so that every expected value, computed here from the same generators, is
 * exact whatever order the library reduces in.
 */
#include "tests/api/c_api_rank_checks.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Elements per rank and per block: odd, so no power-of-two chunking hides a bug. */
enum { kCount = 1031, kBlocks = C_API_MAX_RANKS * kCount };

typedef struct {
  int rank;
  int nranks;
  chorusComm_t comm;
} Rank;

/* Prints a failed call; returns 1 so that callers can `return CallFailed(...)`. */
static int CallFailed(const Rank* self, const char* call, chorusResult_t result) {
  fprintf(stderr, "rank %d of %d: %s returned %s: %s\n", self->rank, self->nranks, call,
          chorusGetErrorString(result), chorusGetLastError(self->comm));
  return 1;
}

#define CALL(self, call)                                                       \
  do {                                                                         \
    chorusResult_t call_result_ = (call);                                      \
    if (call_result_ != chorusSuccess) return CallFailed(self, #call, call_result_); \
  } while (0)

static int CheckInts(const Rank* self, const char* what, const int32_t* got, const int32_t* want, size_t count) {
  size_t i;
  for (i = 0; i < count; ++i) {
    if (got[i] != want[i]) {
      fprintf(stderr, "rank %d of %d: %s[%zu] = %d, expected %d\n", self->rank, self->nranks, what, i,
              (int)got[i], (int)want[i]);
      return 1;
    }
  }
  return 0;
}

static int CheckFloats(const Rank* self, const char* what, const float* got, const float* want, size_t count) {
  size_t i;
  for (i = 0; i < count; ++i) {
    if (got[i] != want[i]) {
      fprintf(stderr, "rank %d of %d: %s[%zu] = %.9g, expected %.9g\n", self->rank, self->nranks, what, i,
              (double)got[i], (double)want[i]);
      return 1;
    }
  }
  return 0;
}

/* Input of `source` (a rank, or any other tag) at `index`: in [-100, 100]. */
static int32_t IntValue(int source, size_t index) {
  return (int32_t)((index * 7 + (size_t)source * 13) % 201) - 100;
}

static float HalfValue(int source, size_t index) { return 0.5f * (float)IntValue(source, index); }

static void FillInts(int32_t* buffer, size_t count, int32_t value) {
  size_t i;
  for (i = 0; i < count; ++i) buffer[i] = value;
}

static void FillFloats(float* buffer, size_t count, float value) {
  size_t i;
  for (i = 0; i < count; ++i) buffer[i] = value;
}

static int32_t IntSum(int nranks, size_t index) {
  int32_t sum = 0;
  int r;
  for (r = 0; r < nranks; ++r) sum += IntValue(r, index);
  return sum;
}

static int CheckCommunicator(const Rank* self) {
  int count = -1, rank = -1, version = -1;
  CALL(self, chorusGetVersion(&version));
  CALL(self, chorusCommCount(self->comm, &count));
  CALL(self, chorusCommUserRank(self->comm, &rank));
  if (version != CHORUS_VERSION_CODE || count != self->nranks || rank != self->rank) {
    fprintf(stderr, "rank %d of %d: version %d count %d rank %d, expected %d %d %d\n", self->rank, self->nranks,
            version, count, rank, CHORUS_VERSION_CODE, self->nranks, self->rank);
    return 1;
  }
  return 0;
}

/* Float32 sum out of place and avg in place; int32 sum in place and avg out of place. */
static int CheckAllReduce(const Rank* self) {
  float fsend[kCount], frecv[kCount], fwant[kCount];
  int32_t isend[kCount], irecv[kCount], iwant[kCount];
  const int n = self->nranks;
  size_t i;

  for (i = 0; i < kCount; ++i) {
    fsend[i] = HalfValue(self->rank, i);
    fwant[i] = 0.5f * (float)IntSum(n, i);
  }
  FillFloats(frecv, kCount, -1.0f);
  CALL(self, chorusAllReduce(fsend, frecv, kCount, chorusFloat32, chorusSum, self->comm, NULL));
  if (CheckFloats(self, "allreduce float32 sum", frecv, fwant, kCount)) return 1;

  /* n * x on every rank: the average is the exact sum of x. */
  for (i = 0; i < kCount; ++i) {
    frecv[i] = (float)n * HalfValue(self->rank, i);
    fwant[i] = 0.5f * (float)IntSum(n, i);
  }
  CALL(self, chorusAllReduce(frecv, frecv, kCount, chorusFloat32, chorusAvg, self->comm, NULL));
  if (CheckFloats(self, "allreduce float32 avg (in place)", frecv, fwant, kCount)) return 1;

  for (i = 0; i < kCount; ++i) {
    irecv[i] = IntValue(self->rank, i);
    iwant[i] = IntSum(n, i);
  }
  CALL(self, chorusAllReduce(irecv, irecv, kCount, chorusInt32, chorusSum, self->comm, NULL));
  if (CheckInts(self, "allreduce int32 sum (in place)", irecv, iwant, kCount)) return 1;

  /* Integer average truncates toward zero, as C's division does. */
  for (i = 0; i < kCount; ++i) {
    isend[i] = IntValue(self->rank, i);
    iwant[i] = IntSum(n, i) / n;
  }
  FillInts(irecv, kCount, -1);
  CALL(self, chorusAllReduce(isend, irecv, kCount, chorusInt32, chorusAvg, self->comm, NULL));
  return CheckInts(self, "allreduce int32 avg", irecv, iwant, kCount);
}

/* Broadcast from the last rank; non-roots pass no send buffer. */
static int CheckBroadcast(const Rank* self) {
  float send[kCount], recv[kCount], want[kCount];
  const int root = self->nranks - 1;
  size_t i;
  for (i = 0; i < kCount; ++i) {
    send[i] = HalfValue(root + 40, i);
    want[i] = send[i];
  }
  FillFloats(recv, kCount, -1.0f);
  CALL(self, chorusBroadcast(self->rank == root ? send : NULL, recv, kCount, chorusFloat32, root, self->comm, NULL));
  return CheckFloats(self, "broadcast from the last rank", recv, want, kCount);
}

/* Max to rank 1 (0 of 1); non-roots pass no receive buffer. */
static int CheckReduce(const Rank* self) {
  int32_t send[kCount], recv[kCount], want[kCount];
  const int root = self->nranks > 1 ? 1 : 0;
  size_t i;
  int r;
  for (i = 0; i < kCount; ++i) {
    send[i] = IntValue(self->rank, i);
    want[i] = IntValue(0, i);
    for (r = 1; r < self->nranks; ++r) {
      if (IntValue(r, i) > want[i]) want[i] = IntValue(r, i);
    }
  }
  FillInts(recv, kCount, -1);
  CALL(self, chorusReduce(send, self->rank == root ? recv : NULL, kCount, chorusInt32, chorusMax, root, self->comm,
                          NULL));
  return self->rank == root ? CheckInts(self, "reduce max to rank 1", recv, want, kCount) : 0;
}

static int CheckAllGather(const Rank* self) {
  int32_t send[kCount], recv[kBlocks], want[kBlocks];
  const size_t total = (size_t)self->nranks * kCount;
  size_t i;
  for (i = 0; i < kCount; ++i) send[i] = IntValue(self->rank, i);
  for (i = 0; i < total; ++i) want[i] = IntValue((int)(i / kCount), i % kCount);
  FillInts(recv, total, -1);
  CALL(self, chorusAllGather(send, recv, kCount, chorusInt32, self->comm, NULL));
  return CheckInts(self, "allgather", recv, want, total);
}

/* Float32 sum: block b of every rank's input reduces into rank b. */
static int CheckReduceScatter(const Rank* self) {
  float send[kBlocks], recv[kCount], want[kCount];
  const size_t total = (size_t)self->nranks * kCount;
  const size_t mine = (size_t)self->rank * kCount;
  size_t i;
  for (i = 0; i < total; ++i) send[i] = HalfValue(self->rank, i);
  for (i = 0; i < kCount; ++i) want[i] = 0.5f * (float)IntSum(self->nranks, mine + i);
  FillFloats(recv, kCount, -1.0f);
  CALL(self, chorusReduceScatter(send, recv, kCount, chorusFloat32, chorusSum, self->comm, NULL));
  return CheckFloats(self, "reducescatter float32 sum", recv, want, kCount);
}

/* Block j from rank s is tagged s * nranks + j. */
static int CheckAlltoAll(const Rank* self) {
  int32_t send[kBlocks] = {0}, recv[kBlocks], want[kBlocks];
  const int n = self->nranks;
  const size_t total = (size_t)n * kCount;
  size_t i;
  for (i = 0; i < total; ++i) {
    send[i] = IntValue(self->rank * n + (int)(i / kCount), i % kCount);
    want[i] = IntValue((int)(i / kCount) * n + self->rank, i % kCount);
  }
  FillInts(recv, total, -1);
  CALL(self, chorusAlltoAll(send, recv, kCount, chorusInt32, self->comm, NULL));
  return CheckInts(self, "alltoall", recv, want, total);
}

/* Gather to rank nranks/2, in place on the root; non-roots pass no receive buffer. */
static int CheckGather(const Rank* self) {
  int32_t send[kCount], recv[kBlocks], want[kBlocks];
  const int root = self->nranks / 2;
  const size_t total = (size_t)self->nranks * kCount;
  size_t i;
  FillInts(recv, total, -1);
  for (i = 0; i < kCount; ++i) send[i] = IntValue(self->rank + 60, i);
  for (i = 0; i < kCount; ++i) recv[(size_t)root * kCount + i] = IntValue(root + 60, i);
  for (i = 0; i < total; ++i) want[i] = IntValue((int)(i / kCount) + 60, i % kCount);
  CALL(self, chorusGather(self->rank == root ? recv + (size_t)root * kCount : send,
                          self->rank == root ? recv : NULL, kCount, chorusInt32, root, self->comm, NULL));
  return self->rank == root ? CheckInts(self, "gather to nranks/2 (in place)", recv, want, total) : 0;
}

/* Scatter from the second to last rank (rank 1 of 2, 0 of 1); non-roots pass no send buffer. */
static int CheckScatter(const Rank* self) {
  float send[kBlocks], recv[kCount], want[kCount];
  const int root = self->nranks >= 3 ? self->nranks - 2 : self->nranks - 1;
  const size_t total = (size_t)self->nranks * kCount;
  size_t i;
  for (i = 0; i < total; ++i) send[i] = HalfValue(80 + (int)(i / kCount), i % kCount);
  for (i = 0; i < kCount; ++i) want[i] = HalfValue(80 + self->rank, i);
  FillFloats(recv, kCount, -1.0f);
  CALL(self, chorusScatter(self->rank == root ? send : NULL, recv, kCount, chorusFloat32, root, self->comm, NULL));
  return CheckFloats(self, "scatter from nranks-2", recv, want, kCount);
}

/* One group: send right, receive left, and a message to oneself. */
static int CheckSendRecvRing(const Rank* self) {
  int32_t to_right[kCount], from_left[kCount], to_self[kCount], from_self[kCount];
  int32_t want_left[kCount], want_self[kCount];
  const int right = (self->rank + 1) % self->nranks;
  const int left = (self->rank + self->nranks - 1) % self->nranks;
  size_t i;
  for (i = 0; i < kCount; ++i) {
    to_right[i] = IntValue(self->rank + 100, i);
    want_left[i] = IntValue(left + 100, i);
    to_self[i] = IntValue(self->rank + 200, i);
    want_self[i] = to_self[i];
    if (self->nranks == 1) { /* all four are with oneself: they match in issue order */
      want_left[i] = to_self[i];
      want_self[i] = to_right[i];
    }
  }
  FillInts(from_left, kCount, -1);
  FillInts(from_self, kCount, -1);
  CALL(self, chorusGroupStart());
  CALL(self, chorusRecv(from_left, kCount, chorusInt32, left, self->comm, NULL));
  CALL(self, chorusSend(to_self, kCount, chorusInt32, self->rank, self->comm, NULL));
  CALL(self, chorusSend(to_right, kCount, chorusInt32, right, self->comm, NULL));
  CALL(self, chorusRecv(from_self, kCount, chorusInt32, self->rank, self->comm, NULL));
  CALL(self, chorusGroupEnd());
  if (CheckInts(self, "ring recv from left", from_left, want_left, kCount)) return 1;
  return CheckInts(self, "recv from self", from_self, want_self, kCount);
}

/* An allreduce enqueued on a host stream. */
static int CheckHostStream(const Rank* self) {
  int32_t buffer[kCount], want[kCount];
  chorusStream_t stream = NULL;
  chorusResult_t queried;
  size_t i;
  for (i = 0; i < kCount; ++i) {
    buffer[i] = IntValue(self->rank + 7, i);
    want[i] = 0;
  }
  for (i = 0; i < kCount; ++i) {
    int r;
    for (r = 0; r < self->nranks; ++r) want[i] += IntValue(r + 7, i);
  }
  CALL(self, chorusStreamCreate(&stream));
  CALL(self, chorusAllReduce(buffer, buffer, kCount, chorusInt32, chorusSum, self->comm, stream));
  queried = chorusStreamQuery(stream);
  if (queried != chorusSuccess && queried != chorusInProgress) return CallFailed(self, "chorusStreamQuery", queried);
  CALL(self, chorusStreamSynchronize(stream));
  CALL(self, chorusStreamQuery(stream));
  CALL(self, chorusStreamDestroy(stream));
  return CheckInts(self, "allreduce on a host stream", buffer, want, kCount);
}

/* An allreduce on one stream, an event after it, a second stream waiting
 * on the event before a broadcast of the result. */
static int CheckEvents(const Rank* self) {
  int32_t buffer[kCount], copy[kCount], want[kCount];
  chorusStream_t first = NULL, second = NULL;
  chorusEvent_t done = NULL;
  chorusResult_t queried;
  size_t i;
  for (i = 0; i < kCount; ++i) {
    buffer[i] = IntValue(self->rank + 11, i);
    copy[i] = -1;
    want[i] = 0;
  }
  for (i = 0; i < kCount; ++i) {
    int r;
    for (r = 0; r < self->nranks; ++r) want[i] += IntValue(r + 11, i);
  }
  CALL(self, chorusStreamCreate(&first));
  CALL(self, chorusStreamCreate(&second));
  CALL(self, chorusEventCreate(&done));
  CALL(self, chorusEventQuery(done)); /* never recorded: complete */
  CALL(self, chorusAllReduce(buffer, buffer, kCount, chorusInt32, chorusSum, self->comm, first));
  CALL(self, chorusEventRecord(done, first));
  queried = chorusEventQuery(done);
  if (queried != chorusSuccess && queried != chorusInProgress) return CallFailed(self, "chorusEventQuery", queried);
  CALL(self, chorusStreamWaitEvent(second, done));
  CALL(self, chorusBroadcast(buffer, copy, kCount, chorusInt32, 0, self->comm, second));
  CALL(self, chorusEventSynchronize(done));
  CALL(self, chorusStreamSynchronize(second));
  CALL(self, chorusEventDestroy(done));
  CALL(self, chorusStreamDestroy(second));
  CALL(self, chorusStreamDestroy(first));
  if (CheckInts(self, "allreduce before an event", buffer, want, kCount)) return 1;
  return CheckInts(self, "broadcast after waiting on the event", copy, want, kCount);
}

/* Host-immediate float scalar (read once) and "device" int32 scalar (read per call). */
static int CheckPreMulSum(const Rank* self) {
  float fsend[kCount], frecv[kCount], fwant[kCount];
  int32_t isend[kCount], irecv[kCount], iwant[kCount];
  float half = 0.5f;
  int32_t factor = 3;
  chorusRedOp_t halved = chorusSum, scaled = chorusSum;
  size_t i;
  CALL(self, chorusRedOpCreatePreMulSum(&halved, &half, chorusFloat32, chorusScalarHostImmediate, self->comm));
  CALL(self, chorusRedOpCreatePreMulSum(&scaled, &factor, chorusInt32, chorusScalarDevice, self->comm));
  if ((int)halved < (int)chorusNumOps || (int)scaled < (int)chorusNumOps || halved == scaled) {
    fprintf(stderr, "rank %d: premulsum ops %d and %d\n", self->rank, (int)halved, (int)scaled);
    return 1;
  }
  half = 8.0f;  /* must not matter: read at creation */
  factor = 5;   /* must matter: read at the call */
  for (i = 0; i < kCount; ++i) {
    fsend[i] = (float)IntValue(self->rank, i);
    fwant[i] = 0.5f * (float)IntSum(self->nranks, i);
    isend[i] = IntValue(self->rank, i);
    iwant[i] = 5 * IntSum(self->nranks, i);
  }
  FillFloats(frecv, kCount, -1.0f);
  FillInts(irecv, kCount, -1);
  CALL(self, chorusAllReduce(fsend, frecv, kCount, chorusFloat32, halved, self->comm, NULL));
  CALL(self, chorusAllReduce(isend, irecv, kCount, chorusInt32, scaled, self->comm, NULL));
  CALL(self, chorusRedOpDestroy(halved, self->comm));
  CALL(self, chorusRedOpDestroy(scaled, self->comm));
  if (CheckFloats(self, "premulsum host-immediate 0.5", frecv, fwant, kCount)) return 1;
  return CheckInts(self, "premulsum device scalar 5", irecv, iwant, kCount);
}

/*
 * Even and odd ranks, key = -rank so that each part is in reverse order; the
 * last rank of 3 or more stays out (CHORUS_SPLIT_NOCOLOR).
 */
static int CheckSplit(const Rank* self) {
  const int n = self->nranks;
  const int left_out = n >= 3 ? n - 1 : -1;
  const int color = self->rank == left_out ? CHORUS_SPLIT_NOCOLOR : self->rank % 2;
  int32_t want[C_API_MAX_RANKS], got[C_API_MAX_RANKS];
  int members = 0, my_index = -1, count = -1, new_rank = -1, r;
  Rank part;
  chorusComm_t newcomm = NULL;
  CALL(self, chorusCommSplit(self->comm, color, -self->rank, &newcomm, NULL));
  if (color == CHORUS_SPLIT_NOCOLOR) {
    if (newcomm == NULL) return 0;
    fprintf(stderr, "rank %d: CHORUS_SPLIT_NOCOLOR gave a communicator\n", self->rank);
    return 1;
  }
  for (r = n - 1; r >= 0; --r) {
    if (r == left_out || r % 2 != color) continue;
    if (r == self->rank) my_index = members;
    want[members++] = r;
  }
  part.rank = my_index;
  part.nranks = members;
  part.comm = newcomm;
  if (newcomm == NULL) {
    fprintf(stderr, "rank %d: split gave no communicator\n", self->rank);
    return 1;
  }
  CALL(&part, chorusCommCount(newcomm, &count));
  CALL(&part, chorusCommUserRank(newcomm, &new_rank));
  if (count != members || new_rank != my_index) {
    fprintf(stderr, "rank %d: split count %d rank %d, expected %d %d\n", self->rank, count, new_rank, members,
            my_index);
    return 1;
  }
  /* In place: my old rank already sits in my block. */
  FillInts(got, (size_t)members, -1);
  got[my_index] = self->rank;
  CALL(&part, chorusAllGather(got + my_index, got, 1, chorusInt32, newcomm, NULL));
  if (CheckInts(&part, "old ranks gathered on the split communicator", got, want, (size_t)members)) return 1;
  CALL(&part, chorusCommDestroy(newcomm));
  return 0;
}

/* chorusCommDumpTrace: a bad path is refused with a clear error; a good one
 * gets the header naming this rank, then the collectives run so far. */
static int CheckDumpTrace(const Rank* self) {
  char path[512], line[1024], header[128];
  const char* dir = getenv("TMPDIR");
  chorusResult_t result = chorusCommDumpTrace(self->comm, "/nonexistent-chorus-dir/trace.jsonl");
  FILE* file;
  int allreduces = 0;
  if (result != chorusInvalidArgument || strstr(chorusGetLastError(self->comm), "/nonexistent-chorus-dir") == NULL) {
    fprintf(stderr, "rank %d: chorusCommDumpTrace to a bad path returned %d (%s)\n", self->rank, (int)result,
            chorusGetLastError(self->comm));
    return 1;
  }
  snprintf(path, sizeof(path), "%s/chorus_c_api_trace_%d_of_%d.jsonl", dir != NULL ? dir : "/tmp", self->rank,
           self->nranks);
  CALL(self, chorusCommDumpTrace(self->comm, path));
  file = fopen(path, "r");
  if (file == NULL) {
    fprintf(stderr, "rank %d: chorusCommDumpTrace wrote no %s\n", self->rank, path);
    return 1;
  }
  snprintf(header, sizeof(header), "{\"chorus_trace\":1,\"rank\":%d,\"nranks\":%d,", self->rank, self->nranks);
  if (fgets(line, sizeof(line), file) == NULL || strncmp(line, header, strlen(header)) != 0) {
    fprintf(stderr, "rank %d: trace header is not '%s...'\n", self->rank, header);
    fclose(file);
    return 1;
  }
  while (fgets(line, sizeof(line), file) != NULL) allreduces += strstr(line, "\"call\":\"AllReduce\"") != NULL;
  fclose(file);
  remove(path);
  if (allreduces < 4) {
    fprintf(stderr, "rank %d: trace holds %d AllReduce entries, expected at least 4\n", self->rank, allreduces);
    return 1;
  }
  return 0;
}

int RunRankChecks(const chorusUniqueId* id, int nranks, int rank) {
  Rank self;
  chorusResult_t async_error = chorusInternalError;
  self.rank = rank;
  self.nranks = nranks;
  self.comm = NULL;
  CALL(&self, chorusCommInitRank(&self.comm, nranks, *id, rank));
  if (CheckCommunicator(&self) || CheckAllReduce(&self) || CheckBroadcast(&self) || CheckReduce(&self) ||
      CheckAllGather(&self) || CheckReduceScatter(&self) || CheckAlltoAll(&self) || CheckGather(&self) ||
      CheckScatter(&self) || CheckSendRecvRing(&self) || CheckHostStream(&self) || CheckEvents(&self) || CheckPreMulSum(&self) ||
      CheckSplit(&self) || CheckDumpTrace(&self)) {
    return 1;
  }
  CALL(&self, chorusCommGetAsyncError(self.comm, &async_error));
  if (async_error != chorusSuccess) return CallFailed(&self, "asynchronous error", async_error);
  CALL(&self, chorusCommFinalize(self.comm));
  CALL(&self, chorusCommDestroy(self.comm));
  return 0;
}
