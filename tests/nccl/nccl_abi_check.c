/* An NCCL program in C, compiled against CUDA's nccl.h and linked with
 * -lnccl exactly as against NVIDIA's library; nccl_abi_test runs it with
 * LD_LIBRARY_PATH pointing at Chorus's libnccl.so.2. It uses host buffers
 * (this build of libnccl.so.2 serves host memory) and checks every result.
 *
 *   nccl_abi_check procs N    N processes, the id from rank 0 through pipes
 *   nccl_abi_check threads N  ncclCommInitAll, one thread per rank
 *   nccl_abi_check group N    one thread creates N ranks in a group and
 *                             drives them with grouped calls, then one
 *                             thread per rank
 *   nccl_abi_check shrink N   N processes; the last exits after init, the
 *                             others shrink it away and go on
 *
 * Prints "OK <mode> <N>: <checks> checks" and exits 0, or names each
 * failed check on stderr and exits 1. */
#include <errno.h>
#include <math.h>
#include <nccl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static _Thread_local int t_rank = -1;
static _Thread_local long t_checks;
static _Thread_local long t_failures;

#define CHECK(cond, ...)                                                     \
  do {                                                                       \
    ++t_checks;                                                              \
    if (!(cond)) {                                                           \
      ++t_failures;                                                          \
      fprintf(stderr, "rank %d: %s:%d: check failed: %s: ", t_rank,          \
              __FILE__, __LINE__, #cond);                                    \
      fprintf(stderr, __VA_ARGS__);                                          \
      fprintf(stderr, "\n");                                                 \
    }                                                                        \
  } while (0)

#define EXPECT_OK(call)                                                      \
  do {                                                                       \
    ncclResult_t r_ = (call);                                                \
    CHECK(r_ == ncclSuccess, "%s returned %d (%s): %s", #call, (int)r_,      \
          ncclGetErrorString(r_), ncclGetLastError(NULL));                   \
  } while (0)

/* Expects `code` and a last-error text containing `needle`. */
#define EXPECT_ERROR(call, code, needle)                                     \
  do {                                                                       \
    ncclResult_t r_ = (call);                                                \
    const char* text_ = ncclGetLastError(NULL);                              \
    CHECK(r_ == (code), "%s returned %d, expected %d (%s)", #call, (int)r_,  \
          (int)(code), text_);                                               \
    CHECK(strstr(text_, (needle)) != NULL,                                   \
          "%s: last error \"%s\" does not mention \"%s\"", #call, text_,     \
          (needle));                                                         \
  } while (0)

/* ---- element access for every datatype ------------------------------- */

static uint16_t FloatToHalf(float f) { /* exact for the small values used */
  uint32_t x;
  memcpy(&x, &f, 4);
  if (f == 0.0f) return (uint16_t)((x >> 16) & 0x8000);
  uint32_t sign = (x >> 16) & 0x8000;
  int exp = (int)((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = (x >> 13) & 0x3ff;
  return (uint16_t)(sign | ((uint32_t)exp << 10) | mant);
}

static float HalfToFloat(uint16_t h) {
  int exp = (h >> 10) & 0x1f;
  int mant = h & 0x3ff;
  float value = exp == 0 ? ldexpf((float)mant, -24) : ldexpf(1.0f + mant / 1024.0f, exp - 15);
  return (h & 0x8000) ? -value : value;
}

static uint16_t FloatToBf16(float f) { /* exact for the small values used */
  uint32_t x;
  memcpy(&x, &f, 4);
  return (uint16_t)(x >> 16);
}

static float Bf16ToFloat(uint16_t b) {
  uint32_t x = (uint32_t)b << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

static void Set(ncclDataType_t t, void* buf, size_t i, double v) {
  switch (t) {
    case ncclInt8: ((int8_t*)buf)[i] = (int8_t)v; break;
    case ncclUint8: ((uint8_t*)buf)[i] = (uint8_t)v; break;
    case ncclInt32: ((int32_t*)buf)[i] = (int32_t)v; break;
    case ncclUint32: ((uint32_t*)buf)[i] = (uint32_t)v; break;
    case ncclInt64: ((int64_t*)buf)[i] = (int64_t)v; break;
    case ncclUint64: ((uint64_t*)buf)[i] = (uint64_t)v; break;
    case ncclFloat16: ((uint16_t*)buf)[i] = FloatToHalf((float)v); break;
    case ncclFloat32: ((float*)buf)[i] = (float)v; break;
    case ncclFloat64: ((double*)buf)[i] = v; break;
    case ncclBfloat16: ((uint16_t*)buf)[i] = FloatToBf16((float)v); break;
    default: abort();
  }
}

static double Get(ncclDataType_t t, const void* buf, size_t i) {
  switch (t) {
    case ncclInt8: return ((const int8_t*)buf)[i];
    case ncclUint8: return ((const uint8_t*)buf)[i];
    case ncclInt32: return ((const int32_t*)buf)[i];
    case ncclUint32: return ((const uint32_t*)buf)[i];
    case ncclInt64: return (double)((const int64_t*)buf)[i];
    case ncclUint64: return (double)((const uint64_t*)buf)[i];
    case ncclFloat16: return HalfToFloat(((const uint16_t*)buf)[i]);
    case ncclFloat32: return ((const float*)buf)[i];
    case ncclFloat64: return ((const double*)buf)[i];
    case ncclBfloat16: return Bf16ToFloat(((const uint16_t*)buf)[i]);
    default: abort();
  }
}

static int IsFloating(ncclDataType_t t) {
  return t == ncclFloat16 || t == ncclFloat32 || t == ncclFloat64 || t == ncclBfloat16;
}

/* Relative tolerance of an average (rounded once in the element type). */
static double AvgTolerance(ncclDataType_t t) {
  switch (t) {
    case ncclFloat16: return 1e-3;
    case ncclBfloat16: return 8e-3;
    case ncclFloat32: return 1e-6;
    default: return 1e-12;
  }
}

static const ncclDataType_t kTypes[] = {ncclInt8, ncclUint8, ncclInt32, ncclUint32, ncclInt64,
                                        ncclUint64, ncclFloat16, ncclFloat32, ncclFloat64, ncclBfloat16};
static const char* const kTypeNames[] = {"int8", "uint8", "int32", "uint32", "int64",
                                         "uint64", "float16", "float32", "float64", "bfloat16"};
static const ncclRedOp_t kOps[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
static const char* const kOpNames[] = {"sum", "prod", "max", "min", "avg"};

/* Rank r's element i: 1, 2 or 3, so that products of 3 ranks fit int8. */
static double Input(int r, size_t i) { return (double)((r + (int)i) % 3 + 1); }

static double Reduced(ncclRedOp_t op, ncclDataType_t t, int n, size_t i) {
  double acc = Input(0, i);
  for (int r = 1; r < n; ++r) {
    double x = Input(r, i);
    switch (op) {
      case ncclSum: case ncclAvg: acc += x; break;
      case ncclProd: acc *= x; break;
      case ncclMax: acc = x > acc ? x : acc; break;
      case ncclMin: acc = x < acc ? x : acc; break;
      default: abort();
    }
  }
  if (op == ncclAvg) acc = IsFloating(t) ? acc / n : floor(acc / n); /* integers truncate */
  return acc;
}

static int Matches(ncclRedOp_t op, ncclDataType_t t, double got, double want) {
  if (op == ncclAvg && IsFloating(t)) return fabs(got - want) <= AvgTolerance(t) * fabs(want);
  return got == want;
}

/* ---- the suite each rank runs ---------------------------------------- */

enum { kCount = 37 };

static void CheckAllReduce(ncclComm_t comm, int rank, int n) {
  unsigned char send[kCount * 8], recv[kCount * 8];
  for (size_t ti = 0; ti < sizeof(kTypes) / sizeof(kTypes[0]); ++ti) {
    ncclDataType_t t = kTypes[ti];
    for (size_t oi = 0; oi < sizeof(kOps) / sizeof(kOps[0]); ++oi) {
      ncclRedOp_t op = kOps[oi];
      for (int in_place = 0; in_place < 2; ++in_place) {
        for (size_t i = 0; i < kCount; ++i) Set(t, send, i, Input(rank, i));
        memset(recv, 0xee, sizeof(recv));
        void* out = in_place ? (void*)send : (void*)recv;
        EXPECT_OK(ncclAllReduce(send, out, kCount, t, op, comm, NULL));
        int bad = -1;
        for (size_t i = 0; i < kCount && bad < 0; ++i) {
          if (!Matches(op, t, Get(t, out, i), Reduced(op, t, n, i))) bad = (int)i;
        }
        CHECK(bad < 0, "AllReduce %s %s%s: element %d is %g, expected %g", kTypeNames[ti], kOpNames[oi],
              in_place ? " in place" : "", bad, bad < 0 ? 0.0 : Get(t, out, (size_t)bad),
              bad < 0 ? 0.0 : Reduced(op, t, n, (size_t)bad));
      }
    }
  }
}

static void CheckBroadcast(ncclComm_t comm, int rank, int n) {
  for (int root = 0; root < n; ++root) {
    float send[50], recv[50];
    for (int i = 0; i < 50; ++i) send[i] = rank == root ? (float)(root * 100 + i) : -1.0f;
    memset(recv, 0, sizeof(recv));
    EXPECT_OK(ncclBroadcast(send, recv, 50, ncclFloat32, root, comm, NULL));
    int ok = 1;
    for (int i = 0; i < 50; ++i) ok &= recv[i] == (float)(root * 100 + i);
    CHECK(ok, "Broadcast from %d out of place", root);

    int64_t buf[20];
    for (int i = 0; i < 20; ++i) buf[i] = rank == root ? (int64_t)root * 1000000000000LL + i : -1;
    EXPECT_OK(ncclBroadcast(buf, buf, 20, ncclInt64, root, comm, NULL));
    ok = 1;
    for (int i = 0; i < 20; ++i) ok &= buf[i] == (int64_t)root * 1000000000000LL + i;
    CHECK(ok, "Broadcast from %d in place", root);

    uint16_t half[9];
    for (int i = 0; i < 9; ++i) half[i] = rank == root ? FloatToHalf((float)(root + i)) : 0;
    EXPECT_OK(ncclBcast(half, 9, ncclFloat16, root, comm, NULL));
    ok = 1;
    for (int i = 0; i < 9; ++i) ok &= HalfToFloat(half[i]) == (float)(root + i);
    CHECK(ok, "Bcast from %d", root);
  }
}

static void CheckReduce(ncclComm_t comm, int rank, int n) {
  for (int root = 0; root < n; ++root) {
    double send[kCount], recv[kCount];
    for (size_t i = 0; i < kCount; ++i) send[i] = Input(rank, i);
    for (size_t i = 0; i < kCount; ++i) recv[i] = -1.0;
    EXPECT_OK(ncclReduce(send, rank == root ? recv : NULL, kCount, ncclFloat64, ncclSum, root, comm, NULL));
    if (rank == root) {
      int ok = 1;
      for (size_t i = 0; i < kCount; ++i) ok &= recv[i] == Reduced(ncclSum, ncclFloat64, n, i);
      CHECK(ok, "Reduce sum to %d", root);
    }
    int32_t buf[kCount];
    for (size_t i = 0; i < kCount; ++i) buf[i] = (int32_t)Input(rank, i);
    EXPECT_OK(ncclReduce(buf, buf, kCount, ncclInt32, ncclMax, root, comm, NULL));
    if (rank == root) {
      int ok = 1;
      for (size_t i = 0; i < kCount; ++i) ok &= buf[i] == (int32_t)Reduced(ncclMax, ncclInt32, n, i);
      CHECK(ok, "Reduce max to %d in place", root);
    }
  }
}

static void CheckAllGather(ncclComm_t comm, int rank, int n) {
  enum { kSend = 13 };
  uint8_t send[kSend], recv[kSend * 3];
  for (int i = 0; i < kSend; ++i) send[i] = (uint8_t)(rank * 50 + i);
  memset(recv, 0, sizeof(recv));
  EXPECT_OK(ncclAllGather(send, recv, kSend, ncclUint8, comm, NULL));
  int ok = 1;
  for (int r = 0; r < n; ++r)
    for (int i = 0; i < kSend; ++i) ok &= recv[r * kSend + i] == (uint8_t)(r * 50 + i);
  CHECK(ok, "AllGather out of place");

  double buf[kSend * 3];
  for (int i = 0; i < kSend * 3; ++i) buf[i] = -1.0;
  for (int i = 0; i < kSend; ++i) buf[rank * kSend + i] = rank + i / 8.0;
  EXPECT_OK(ncclAllGather(buf + rank * kSend, buf, kSend, ncclFloat64, comm, NULL));
  ok = 1;
  for (int r = 0; r < n; ++r)
    for (int i = 0; i < kSend; ++i) ok &= buf[r * kSend + i] == r + i / 8.0;
  CHECK(ok, "AllGather in place");
}

static void CheckReduceScatter(ncclComm_t comm, int rank, int n) {
  enum { kRecv = 11 };
  float send[kRecv * 3], recv[kRecv];
  for (int j = 0; j < kRecv * n; ++j) send[j] = (float)(rank + j);
  EXPECT_OK(ncclReduceScatter(send, recv, kRecv, ncclFloat32, ncclSum, comm, NULL));
  int ok = 1;
  for (int i = 0; i < kRecv; ++i) {
    float want = 0;
    for (int r = 0; r < n; ++r) want += (float)(r + rank * kRecv + i);
    ok &= recv[i] == want;
  }
  CHECK(ok, "ReduceScatter sum out of place");

  int32_t buf[kRecv * 3];
  for (int j = 0; j < kRecv * n; ++j) buf[j] = rank * 7 + j;
  EXPECT_OK(ncclReduceScatter(buf, buf + rank * kRecv, kRecv, ncclInt32, ncclMax, comm, NULL));
  ok = 1;
  for (int i = 0; i < kRecv; ++i) ok &= buf[rank * kRecv + i] == (n - 1) * 7 + rank * kRecv + i;
  CHECK(ok, "ReduceScatter max in place");
}

static void CheckAlltoAll(ncclComm_t comm, int rank, int n) {
  enum { kBlock = 5 };
  int32_t send[kBlock * 3], recv[kBlock * 3];
  for (int j = 0; j < n; ++j)
    for (int k = 0; k < kBlock; ++k) send[j * kBlock + k] = rank * 1000 + j * 10 + k;
  EXPECT_OK(ncclAlltoAll(send, recv, kBlock, ncclInt32, comm, NULL));
  int ok = 1;
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < kBlock; ++k) ok &= recv[i * kBlock + k] == i * 1000 + rank * 10 + k;
  CHECK(ok, "AlltoAll");
}

static void CheckGatherScatter(ncclComm_t comm, int rank, int n) {
  enum { kBlock = 7 };
  for (int root = 0; root < n; ++root) {
    float send[kBlock], recv[kBlock * 3];
    for (int i = 0; i < kBlock; ++i) send[i] = (float)(rank * 100 + i);
    for (int i = 0; i < kBlock * 3; ++i) recv[i] = -1.0f;
    EXPECT_OK(ncclGather(send, recv, kBlock, ncclFloat32, root, comm, NULL));
    if (rank == root) {
      int ok = 1;
      for (int r = 0; r < n; ++r)
        for (int i = 0; i < kBlock; ++i) ok &= recv[r * kBlock + i] == (float)(r * 100 + i);
      CHECK(ok, "Gather to %d", root);
    }
    float all[kBlock * 3], mine[kBlock];
    for (int r = 0; r < n; ++r)
      for (int i = 0; i < kBlock; ++i) all[r * kBlock + i] = rank == root ? (float)(r * 100 + i + root) : -1.0f;
    EXPECT_OK(ncclScatter(all, mine, kBlock, ncclFloat32, root, comm, NULL));
    int ok = 1;
    for (int i = 0; i < kBlock; ++i) ok &= mine[i] == (float)(rank * 100 + i + root);
    CHECK(ok, "Scatter from %d", root);
  }
  /* In place at the root: its block already sits at recvbuff + root*count. */
  int root = n - 1;
  int32_t buf[kBlock * 3];
  for (int i = 0; i < kBlock * 3; ++i) buf[i] = -1;
  for (int i = 0; i < kBlock; ++i) buf[rank * kBlock + i] = rank * 10 + i;
  EXPECT_OK(ncclGather(buf + rank * kBlock, buf, kBlock, ncclInt32, root, comm, NULL));
  if (rank == root) {
    int ok = 1;
    for (int r = 0; r < n; ++r)
      for (int i = 0; i < kBlock; ++i) ok &= buf[r * kBlock + i] == r * 10 + i;
    CHECK(ok, "Gather in place at %d", root);
  }
}

static void CheckSendRecv(ncclComm_t comm, int rank, int n) {
  enum { kLen = 64 };
  float out[kLen], in[kLen];
  for (int i = 0; i < kLen; ++i) out[i] = (float)(rank * 10 + i);
  memset(in, 0, sizeof(in));
  int next = (rank + 1) % n, prev = (rank + n - 1) % n;
  /* The receive first: a group never deadlocks on order. */
  EXPECT_OK(ncclGroupStart());
  EXPECT_OK(ncclRecv(in, kLen, ncclFloat32, prev, comm, NULL));
  EXPECT_OK(ncclSend(out, kLen, ncclFloat32, next, comm, NULL));
  EXPECT_OK(ncclGroupEnd());
  int ok = 1;
  for (int i = 0; i < kLen; ++i) ok &= in[i] == (float)(prev * 10 + i);
  CHECK(ok, "ring Send/Recv in a group");

  /* Every pair, oneself included. */
  int64_t to[3], from[3];
  for (int j = 0; j < n; ++j) to[j] = rank * 100 + j, from[j] = -1;
  EXPECT_OK(ncclGroupStart());
  for (int j = 0; j < n; ++j) {
    EXPECT_OK(ncclSend(&to[j], 1, ncclInt64, j, comm, NULL));
    EXPECT_OK(ncclRecv(&from[j], 1, ncclInt64, j, comm, NULL));
  }
  EXPECT_OK(ncclGroupEnd());
  ok = 1;
  for (int j = 0; j < n; ++j) ok &= from[j] == j * 100 + rank;
  CHECK(ok, "all-pairs Send/Recv in a group");
}

static void CheckPreMulSum(ncclComm_t comm, int rank, int n) {
  float scalar = (float)(rank + 1);
  ncclRedOp_t op;
  EXPECT_OK(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, ncclScalarHostImmediate, comm));
  scalar = 100.0f; /* read at creation: no effect */
  float x[kCount], y[kCount];
  for (int i = 0; i < kCount; ++i) x[i] = (float)(i + 1);
  EXPECT_OK(ncclAllReduce(x, y, kCount, ncclFloat32, op, comm, NULL));
  int ok = 1;
  for (int i = 0; i < kCount; ++i) ok &= y[i] == (float)((i + 1) * n * (n + 1) / 2);
  CHECK(ok, "PreMulSum (host immediate) AllReduce");
  /* An op made for float32 refuses another type. */
  double d[4] = {1, 2, 3, 4};
  EXPECT_ERROR(ncclAllReduce(d, d, 4, ncclFloat64, op, comm, NULL), ncclInvalidArgument, "PreMulSum");
  EXPECT_OK(ncclRedOpDestroy(op, comm));

  double factor = 2.0;
  EXPECT_OK(ncclRedOpCreatePreMulSum(&op, &factor, ncclFloat64, ncclScalarDevice, comm));
  factor = 0.5 * (rank + 1); /* read at each call */
  double a[kCount], b[kCount];
  for (int i = 0; i < kCount; ++i) a[i] = i;
  EXPECT_OK(ncclReduceScatter(a, b, kCount / n, ncclFloat64, op, comm, NULL));
  ok = 1;
  for (int i = 0; i < kCount / n; ++i) ok &= b[i] == 0.5 * (rank * (kCount / n) + i) * n * (n + 1) / 2;
  CHECK(ok, "PreMulSum (scalar read at each call) ReduceScatter");
  EXPECT_OK(ncclRedOpDestroy(op, comm));
}

static void CheckSplit(ncclComm_t comm, int rank, int n) {
  ncclComm_t half = NULL;
  /* Colour by parity, key reversing the order. */
  EXPECT_OK(ncclCommSplit(comm, rank % 2, n - rank, &half, NULL));
  if (half == NULL) return;
  int members = 0, below = 0;
  for (int r = 0; r < n; ++r) members += r % 2 == rank % 2, below += r % 2 == rank % 2 && r > rank;
  int count = -1, me = -1;
  EXPECT_OK(ncclCommCount(half, &count));
  EXPECT_OK(ncclCommUserRank(half, &me));
  CHECK(count == members && me == below, "split: count %d rank %d, expected %d and %d", count, me, members, below);
  int32_t value = rank, total = -1;
  EXPECT_OK(ncclAllReduce(&value, &total, 1, ncclInt32, ncclSum, half, NULL));
  int want = 0;
  for (int r = 0; r < n; ++r) want += r % 2 == rank % 2 ? r : 0;
  CHECK(total == want, "AllReduce on the split: %d, expected %d", total, want);
  EXPECT_OK(ncclCommDestroy(half));

  ncclComm_t rest = (ncclComm_t)&rest;
  EXPECT_OK(ncclCommSplit(comm, rank == 0 ? NCCL_SPLIT_NOCOLOR : 1, 0, &rest, NULL));
  if (rank == 0) {
    CHECK(rest == NULL, "NCCL_SPLIT_NOCOLOR gives a NULL communicator");
  } else {
    EXPECT_OK(ncclCommCount(rest, &count));
    CHECK(count == n - 1, "split without rank 0 has %d ranks", count);
    EXPECT_OK(ncclCommDestroy(rest));
  }
}

/* ncclCommRevoke by rank 0 on a communicator split off for it: every rank's
   next call on it fails (ncclRemoteError, the message saying who revoked),
   and a shrink gives every rank back. */
static void CheckRevoke(ncclComm_t comm, int rank, int n) {
  ncclComm_t victim = NULL, shrunk = NULL;
  EXPECT_OK(ncclCommSplit(comm, 0, rank, &victim, NULL));
  if (victim == NULL) return;
  /* Every rank has finished the split (its last exchange on `victim`)
     before rank 0 revokes, which would fail it where it is still pending. */
  int32_t value = rank, total = -1;
  EXPECT_OK(ncclAllReduce(&value, &total, 1, ncclInt32, ncclSum, comm, NULL));
  if (rank == 0) EXPECT_OK(ncclCommRevoke(victim, NCCL_REVOKE_DEFAULT));
  EXPECT_ERROR(ncclAllReduce(&value, &total, 1, ncclInt32, ncclSum, victim, NULL), ncclRemoteError, "revoked by");
  EXPECT_OK(ncclCommRevoke(victim, NCCL_REVOKE_DEFAULT)); /* idempotent, on any rank */
  EXPECT_OK(ncclCommShrink(victim, NULL, 0, &shrunk, NULL, NCCL_SHRINK_DEFAULT));
  if (shrunk != NULL) {
    int count = -1;
    EXPECT_OK(ncclCommCount(shrunk, &count));
    CHECK(count == n, "shrink after revoke has %d ranks, expected %d", count, n);
    EXPECT_OK(ncclAllReduce(&value, &total, 1, ncclInt32, ncclSum, shrunk, NULL));
    CHECK(total == n * (n - 1) / 2, "AllReduce after revoke and shrink: %d", total);
    EXPECT_OK(ncclCommDestroy(shrunk));
  }
  EXPECT_OK(ncclCommDestroy(victim));
}

/* Local argument errors: NCCL's result codes, a clear last error, nothing
   communicated, and the communicator still usable after them. */
static void CheckErrors(ncclComm_t comm, int rank, int n) {
  float buf[4] = {1, 2, 3, 4};
  EXPECT_ERROR(ncclAllReduce(buf, buf, 4, ncclFloat32, ncclSum, NULL, NULL), ncclInvalidArgument, "comm is NULL");
  EXPECT_ERROR(ncclAllReduce(buf, buf, 4, ncclNumTypes, ncclSum, comm, NULL), ncclInvalidArgument, "datatype 12");
  EXPECT_ERROR(ncclAllReduce(buf, buf, 4, ncclFloat8e4m3, ncclSum, comm, NULL), ncclInvalidArgument,
               "ncclFloat8e4m3");
  EXPECT_ERROR(ncclAllReduce(buf, buf, 4, ncclFloat32, (ncclRedOp_t)(ncclNumOps + 1000), comm, NULL),
               ncclInvalidArgument, "op");
  EXPECT_ERROR(ncclAllReduce(buf, buf, 4, ncclFloat32, (ncclRedOp_t)-1, comm, NULL), ncclInvalidArgument,
               "not an ncclRedOp_t");
  EXPECT_ERROR(ncclBroadcast(buf, buf, 4, ncclFloat32, n, comm, NULL), ncclInvalidArgument, "root");
  EXPECT_ERROR(ncclReduce(buf, buf, 4, ncclFloat32, ncclSum, -1, comm, NULL), ncclInvalidArgument, "root");
  EXPECT_ERROR(ncclGather(buf, buf, 1, ncclFloat32, n + 5, comm, NULL), ncclInvalidArgument, "root");
  EXPECT_ERROR(ncclSend(buf, 4, ncclFloat32, n, comm, NULL), ncclInvalidArgument, "peer");
  EXPECT_ERROR(ncclRedOpDestroy(ncclSum, comm), ncclInvalidArgument, "not a live op");
  ncclRedOp_t premul;
  float scalar = 1.0f;
  EXPECT_ERROR(ncclRedOpCreatePreMulSum(&premul, &scalar, ncclFloat8e4m3, ncclScalarHostImmediate, comm),
               ncclInvalidArgument, "ncclFloat8e4m3");
  int count = 0;
  EXPECT_ERROR(ncclCommCount(NULL, &count), ncclInvalidArgument, "comm is NULL");
  EXPECT_ERROR(ncclGroupEnd(), ncclInvalidUsage, "ncclGroupStart");
  EXPECT_ERROR(ncclCommRevoke(NULL, NCCL_REVOKE_DEFAULT), ncclInvalidArgument, "comm is NULL");
  EXPECT_ERROR(ncclCommRevoke(comm, 1), ncclInvalidArgument, "revokeFlags");
  ncclWindow_t win;
  EXPECT_ERROR(ncclCommWindowRegister(comm, buf, sizeof(buf), &win, NCCL_WIN_DEFAULT), ncclInvalidUsage,
               "not supported");
  ncclUniqueId id;
  memset(&id, 0, sizeof(id));
  ncclComm_t other;
  ncclConfig_t garbage;
  memset(&garbage, 0, sizeof(garbage));
  EXPECT_ERROR(ncclCommInitRankConfig(&other, 2, id, 0, &garbage), ncclInvalidArgument, "NCCL_CONFIG_INITIALIZER");
  ncclConfig_t bad_blocking = NCCL_CONFIG_INITIALIZER;
  bad_blocking.blocking = 7;
  EXPECT_ERROR(ncclCommInitRankConfig(&other, 2, id, 0, &bad_blocking), ncclInvalidArgument, "blocking");
  EXPECT_ERROR(ncclCommInitRank(&other, 2, id, 2), ncclInvalidArgument, "rank 2");

  CHECK(strcmp(ncclGetErrorString(ncclSuccess), "no error") == 0, "ncclGetErrorString(ncclSuccess)");
  CHECK(strlen(ncclGetErrorString(ncclRemoteError)) > 0, "ncclGetErrorString(ncclRemoteError)");

  /* Still usable. */
  int32_t one = 1, total = 0;
  EXPECT_OK(ncclAllReduce(&one, &total, 1, ncclInt32, ncclSum, comm, NULL));
  CHECK(total == n, "AllReduce after errors: %d", total);
  (void)rank;
}

static void CheckQueries(ncclComm_t comm, int rank, int n) {
  int version = 0, count = -1, me = -1, device = -1;
  EXPECT_OK(ncclGetVersion(&version));
  CHECK(version == NCCL_VERSION_CODE, "ncclGetVersion gives %d, nccl.h says %d", version, NCCL_VERSION_CODE);
  EXPECT_OK(ncclCommCount(comm, &count));
  EXPECT_OK(ncclCommUserRank(comm, &me));
  EXPECT_OK(ncclCommCuDevice(comm, &device));
  CHECK(count == n && me == rank && device == 0, "count %d rank %d device %d", count, me, device);
  ncclResult_t async = ncclInternalError;
  EXPECT_OK(ncclCommGetAsyncError(comm, &async));
  CHECK(async == ncclSuccess, "async error %d", (int)async);

  /* NCCL's allocator and registration, with host memory. */
  void* mem = NULL;
  EXPECT_OK(ncclMemAlloc(&mem, 64 * sizeof(float)));
  CHECK(mem != NULL, "ncclMemAlloc");
  void* handle = NULL;
  EXPECT_OK(ncclCommRegister(comm, mem, 64 * sizeof(float), &handle));
  float* f = (float*)mem;
  for (int i = 0; i < 64; ++i) f[i] = (float)rank;
  EXPECT_OK(ncclAllReduce(f, f, 64, ncclFloat32, ncclMax, comm, NULL));
  CHECK(f[0] == n - 1 && f[63] == n - 1, "AllReduce on ncclMemAlloc memory");
  EXPECT_OK(ncclCommDeregister(comm, handle));
  EXPECT_OK(ncclMemFree(mem));
}

static void RunSuite(ncclComm_t comm, int rank, int n) {
  t_rank = rank;
  CheckQueries(comm, rank, n);
  CheckAllReduce(comm, rank, n);
  CheckBroadcast(comm, rank, n);
  CheckReduce(comm, rank, n);
  CheckAllGather(comm, rank, n);
  CheckReduceScatter(comm, rank, n);
  CheckAlltoAll(comm, rank, n);
  CheckGatherScatter(comm, rank, n);
  CheckSendRecv(comm, rank, n);
  CheckPreMulSum(comm, rank, n);
  CheckSplit(comm, rank, n);
  CheckRevoke(comm, rank, n);
  CheckErrors(comm, rank, n);
  EXPECT_OK(ncclCommFinalize(comm));
  EXPECT_OK(ncclCommDestroy(comm));
}

/* ---- modes ----------------------------------------------------------- */

struct RankArgs {
  ncclComm_t comm;
  int rank, n;
  long checks, failures;
};

static void* RankThread(void* p) {
  struct RankArgs* a = (struct RankArgs*)p;
  RunSuite(a->comm, a->rank, a->n);
  a->checks = t_checks;
  a->failures = t_failures;
  return NULL;
}

/* Runs the suite on comms[0..n) with a thread per rank; adds the counts. */
static void RunThreads(ncclComm_t* comms, int n) {
  struct RankArgs args[3];
  pthread_t threads[3];
  for (int r = 0; r < n; ++r) {
    args[r] = (struct RankArgs){comms[r], r, n, 0, 0};
    pthread_create(&threads[r], NULL, RankThread, &args[r]);
  }
  for (int r = 0; r < n; ++r) {
    pthread_join(threads[r], NULL);
    t_checks += args[r].checks;
    t_failures += args[r].failures;
  }
}

static int ReadAll(int fd, void* buf, size_t len) {
  size_t done = 0;
  while (done < len) {
    ssize_t got = read(fd, (char*)buf + done, len - done);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return -1;
    done += (size_t)got;
  }
  return 0;
}

static void ShrinkAfterDeath(ncclComm_t comm, int rank, int n);

static int RunProcesses(int n, int shrink) {
  /* Fork before any NCCL call (no threads yet), then pass the id. */
  int pipes[3][2];
  pid_t children[3];
  int rank = 0;
  for (int r = 1; r < n; ++r) {
    if (pipe(pipes[r]) != 0) return 1;
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
      rank = r;
      break;
    }
    children[r] = pid;
    close(pipes[r][0]);
  }
  ncclUniqueId id;
  ncclComm_t comm = NULL;
  if (rank == 0) {
    t_rank = 0;
    EXPECT_OK(ncclGetUniqueId(&id));
    for (int r = 1; r < n; ++r) {
      if (write(pipes[r][1], &id, sizeof(id)) != (ssize_t)sizeof(id)) return 1;
      close(pipes[r][1]);
    }
    /* Rank 0 asks for NCCL's non-blocking mode and names the communicator. */
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    config.commName = "nccl_abi_check";
    EXPECT_OK(ncclCommInitRankConfig(&comm, n, id, 0, &config));
  } else {
    t_rank = rank;
    close(pipes[rank][1]);
    if (ReadAll(pipes[rank][0], &id, sizeof(id)) != 0) {
      fprintf(stderr, "rank %d: no id from rank 0\n", rank);
      _exit(1);
    }
    EXPECT_OK(ncclCommInitRank(&comm, n, id, rank));
  }
  if (comm != NULL && shrink) {
    ShrinkAfterDeath(comm, rank, n);
  } else if (comm != NULL) {
    RunSuite(comm, rank, n);
  }
  if (rank != 0) _exit(t_failures == 0 && t_checks > 0 ? 0 : 1);
  int children_ok = 1;
  for (int r = 1; r < n; ++r) {
    int status = 0;
    if (waitpid(children[r], &status, 0) != children[r] || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "rank %d failed (status 0x%x)\n", r, status);
      children_ok = 0;
    }
  }
  return children_ok ? 0 : 1;
}

/* The last rank dies (its process ends, communicator and all); the others
   exclude it with ncclCommShrink and carry on with n - 1 ranks. */
static void ShrinkAfterDeath(ncclComm_t comm, int rank, int n) {
  int32_t one = 1, total = 0;
  EXPECT_OK(ncclAllReduce(&one, &total, 1, ncclInt32, ncclSum, comm, NULL));
  CHECK(total == n, "AllReduce before the death: %d", total);
  if (rank == n - 1) _exit(0);
  int dead[1] = {n - 1};
  ncclComm_t survivors = NULL;
  EXPECT_OK(ncclCommShrink(comm, dead, 1, &survivors, NULL, NCCL_SHRINK_ABORT));
  if (survivors == NULL) return;
  int count = 0, me = -1;
  EXPECT_OK(ncclCommCount(survivors, &count));
  EXPECT_OK(ncclCommUserRank(survivors, &me));
  CHECK(count == n - 1 && me == rank, "shrunk communicator: count %d rank %d", count, me);
  total = 0;
  EXPECT_OK(ncclAllReduce(&one, &total, 1, ncclInt32, ncclSum, survivors, NULL));
  CHECK(total == n - 1, "AllReduce after the shrink: %d", total);
  EXPECT_OK(ncclCommDestroy(survivors));
  EXPECT_OK(ncclCommAbort(comm));
}

static int RunInitAll(int n) {
  ncclComm_t comms[3];
  EXPECT_OK(ncclCommInitAll(comms, n, NULL));
  if (t_failures == 0) RunThreads(comms, n);
  return 0;
}

/* NCCL's single-thread pattern: create every rank inside one group, drive
   them all with grouped calls from this thread. */
static int RunGroup(int n) {
  ncclUniqueId id;
  ncclComm_t comms[3] = {NULL, NULL, NULL};
  EXPECT_OK(ncclGetUniqueId(&id));
  EXPECT_OK(ncclGroupStart());
  for (int r = 0; r < n; ++r) EXPECT_OK(ncclCommInitRank(&comms[r], n, id, r));
  EXPECT_OK(ncclGroupEnd());
  for (int r = 0; r < n; ++r) CHECK(comms[r] != NULL, "communicator of rank %d made at ncclGroupEnd", r);
  if (t_failures > 0) return 1;

  float data[3][8];
  for (int r = 0; r < n; ++r)
    for (int i = 0; i < 8; ++i) data[r][i] = (float)(r + i);
  EXPECT_OK(ncclGroupStart());
  for (int r = 0; r < n; ++r) EXPECT_OK(ncclAllReduce(data[r], data[r], 8, ncclFloat32, ncclSum, comms[r], NULL));
  EXPECT_OK(ncclGroupEnd());
  int ok = 1;
  for (int r = 0; r < n; ++r)
    for (int i = 0; i < 8; ++i) ok &= data[r][i] == (float)(n * (n - 1) / 2 + n * i);
  CHECK(ok, "grouped AllReduce over every rank from one thread");

  /* Splits from one thread, inside a group as well. */
  ncclComm_t halves[3] = {NULL, NULL, NULL};
  EXPECT_OK(ncclGroupStart());
  for (int r = 0; r < n; ++r) EXPECT_OK(ncclCommSplit(comms[r], r % 2, r, &halves[r], NULL));
  EXPECT_OK(ncclGroupEnd());
  int32_t ranks[3];
  for (int r = 0; r < n; ++r) ranks[r] = r;
  EXPECT_OK(ncclGroupStart());
  for (int r = 0; r < n; ++r) EXPECT_OK(ncclAllReduce(&ranks[r], &ranks[r], 1, ncclInt32, ncclSum, halves[r], NULL));
  EXPECT_OK(ncclGroupEnd());
  for (int r = 0; r < n; ++r) {
    int want = 0;
    for (int q = 0; q < n; ++q) want += q % 2 == r % 2 ? q : 0;
    CHECK(ranks[r] == want, "grouped AllReduce on split of rank %d: %d, expected %d", r, ranks[r], want);
  }
  for (int r = 0; r < n; ++r) EXPECT_OK(ncclCommDestroy(halves[r]));

  RunThreads(comms, n);
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s procs|threads|group|shrink N (N in 2..3)\n", argv[0]);
    return 2;
  }
  int n = atoi(argv[2]);
  if (n < 2 || n > 3) return 2;
  int status;
  if (strcmp(argv[1], "procs") == 0) {
    status = RunProcesses(n, 0);
  } else if (strcmp(argv[1], "shrink") == 0) {
    status = RunProcesses(n, 1);
  } else if (strcmp(argv[1], "threads") == 0) {
    status = RunInitAll(n);
  } else if (strcmp(argv[1], "group") == 0) {
    status = RunGroup(n);
  } else {
    return 2;
  }
  if (status != 0 || t_failures != 0 || t_checks == 0) {
    fprintf(stderr, "FAILED %s %d: %ld of %ld checks failed\n", argv[1], n, t_failures, t_checks);
    return 1;
  }
  printf("OK %s %d: %ld checks\n", argv[1], n, t_checks);
  return 0;
}
