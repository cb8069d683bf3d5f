/* An unmodified MPI program for libchorus_mpi.so: every collective the
 * interposer takes over is called through MPI_ (which LD_PRELOAD sends to
 * Chorus) and compared byte for byte with the same call through PMPI_
 * (Open MPI itself) in the same run: datatypes x ops x roots x MPI_IN_PLACE x
 * counts, derived datatypes, calls that must fall back (user ops, 16-bit
 * integers, inter-communicators, MPI_COMM_SELF), non-blocking calls mixed
 * with point-to-point requests in every wait and test call, point-to-point
 * progress while a rank waits in a collective, communicators made and
 * freed. Values are small integers, so every order of reduction gives the
 * same bits.
 *
 * Usage: mpi_interposer_check all     every check above
 *        mpi_interposer_check errors  (2 ranks, CHORUS_TIMEOUT_MS small)
 *                                     a late rank: an MPI error through
 *                                     MPI_ERRORS_RETURN, no hang
 *        mpi_interposer_check threads MPI_THREAD_MULTIPLE, three threads
 *                                     each on its own communicator
 * Prints "rank R pid P" per rank, failures on stderr, and on rank 0
 * "mpi_interposer_check: N checks, 0 failed". After MPI_Finalize each rank
 * checks that no Chorus shared-memory segment of its pid is left in
 * /dev/shm. Exit status 0 when everything passed. */
#include <dirent.h>
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int world_rank = 0;
static long checks = 0;
static long failures = 0;

#define CHECK(cond, ...)                                        \
  do {                                                          \
    __atomic_fetch_add(&checks, 1, __ATOMIC_RELAXED);           \
    if (!(cond)) {                                              \
      __atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);       \
      fprintf(stderr, "rank %d: FAILED %s:%d: ", world_rank, __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                             \
      fprintf(stderr, "\n");                                    \
    }                                                           \
  } while (0)

/* ---- test datatypes ---------------------------------------------------- */

enum Kind { kSigned, kUnsigned, kFloat, kDouble, kComplexFloat, kRaw };

typedef struct {
  MPI_Datatype type;
  const char* name;
  int size;
  enum Kind kind;
  int reducible; /* 1: SUM PROD MIN MAX; 2: SUM only; 0: data movement only */
} TestType;

static TestType types[32];
static int ntypes = 0;

static void AddType(MPI_Datatype type, const char* name, enum Kind kind, int reducible) {
  int size = 0;
  MPI_Type_size(type, &size);
  TestType t = {type, name, size, kind, reducible};
  types[ntypes++] = t;
}

static void InitTypes(void) {
  AddType(MPI_FLOAT, "MPI_FLOAT", kFloat, 1);
  AddType(MPI_DOUBLE, "MPI_DOUBLE", kDouble, 1);
  AddType(MPI_INT, "MPI_INT", kSigned, 1);
  AddType(MPI_LONG, "MPI_LONG", kSigned, 1);
  AddType(MPI_LONG_LONG, "MPI_LONG_LONG", kSigned, 1);
  AddType(MPI_UNSIGNED, "MPI_UNSIGNED", kUnsigned, 1);
  AddType(MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", kUnsigned, 1);
  AddType(MPI_INT8_T, "MPI_INT8_T", kSigned, 1);
  AddType(MPI_UINT8_T, "MPI_UINT8_T", kUnsigned, 1);
  AddType(MPI_INT32_T, "MPI_INT32_T", kSigned, 1);
  AddType(MPI_UINT32_T, "MPI_UINT32_T", kUnsigned, 1);
  AddType(MPI_INT64_T, "MPI_INT64_T", kSigned, 1);
  AddType(MPI_UINT64_T, "MPI_UINT64_T", kUnsigned, 1);
  AddType(MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR", kSigned, 1);
  AddType(MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", kUnsigned, 1);
  AddType(MPI_C_FLOAT_COMPLEX, "MPI_C_FLOAT_COMPLEX", kComplexFloat, 2);
  AddType(MPI_INT16_T, "MPI_INT16_T", kSigned, 1); /* reductions fall back */
  AddType(MPI_BYTE, "MPI_BYTE", kRaw, 0);
  AddType(MPI_CHAR, "MPI_CHAR", kRaw, 0);
}

static const TestType* Find(MPI_Datatype type) {
  for (int i = 0; i < ntypes; ++i) {
    if (types[i].type == type) return &types[i];
  }
  return NULL;
}

/* Small values: any sum or product over 3 ranks fits every type exactly. */
static void Fill(void* buf, const TestType* t, long count, int rank, int seed) {
  for (long i = 0; i < count; ++i) {
    const int v = (int)((i * 7 + rank * 3 + seed) % 5);
    char* p = (char*)buf + i * t->size;
    switch (t->kind) {
      case kSigned: {
        const long long s = v - 2;
        if (t->size == 1) *(int8_t*)p = (int8_t)s;
        else if (t->size == 2) *(int16_t*)p = (int16_t)s;
        else if (t->size == 4) *(int32_t*)p = (int32_t)s;
        else *(int64_t*)p = s;
        break;
      }
      case kUnsigned: {
        const unsigned long long u = (unsigned long long)v + 1;
        if (t->size == 1) *(uint8_t*)p = (uint8_t)u;
        else if (t->size == 4) *(uint32_t*)p = (uint32_t)u;
        else *(uint64_t*)p = u;
        break;
      }
      case kFloat: *(float*)p = (float)(v - 2); break;
      case kDouble: *(double*)p = (double)(v - 2); break;
      case kComplexFloat: ((float*)p)[0] = (float)(v - 2); ((float*)p)[1] = (float)(v + 1); break;
      case kRaw: memset(p, 'a' + (v + rank) % 26, (size_t)t->size); break;
    }
  }
}

static void* Alloc(size_t bytes) {
  void* p = malloc(bytes ? bytes : 1);
  if (p == NULL) {
    fprintf(stderr, "out of memory\n");
    PMPI_Abort(MPI_COMM_WORLD, 2);
  }
  memset(p, 0x5a, bytes ? bytes : 1);
  return p;
}

static const char* OpName(MPI_Op op) {
  if (op == MPI_SUM) return "SUM";
  if (op == MPI_PROD) return "PROD";
  if (op == MPI_MIN) return "MIN";
  if (op == MPI_MAX) return "MAX";
  return "op";
}

static MPI_Op ops[] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX};
static const int counts[] = {1, 7, 3000};

/* ---- blocking collectives against PMPI_ -------------------------------- */

static void CheckAllreduce(MPI_Comm comm, const TestType* t, MPI_Op op, int count, int in_place) {
  int rank;
  MPI_Comm_rank(comm, &rank);
  const size_t bytes = (size_t)count * t->size;
  char* send = Alloc(bytes);
  char* out = Alloc(bytes);
  char* ref = Alloc(bytes);
  Fill(send, t, count, rank, 1);
  if (in_place) {
    memcpy(out, send, bytes);
    memcpy(ref, send, bytes);
    CHECK(MPI_Allreduce(MPI_IN_PLACE, out, count, t->type, op, comm) == MPI_SUCCESS, "Allreduce rc");
    PMPI_Allreduce(MPI_IN_PLACE, ref, count, t->type, op, comm);
  } else {
    CHECK(MPI_Allreduce(send, out, count, t->type, op, comm) == MPI_SUCCESS, "Allreduce rc");
    PMPI_Allreduce(send, ref, count, t->type, op, comm);
  }
  CHECK(memcmp(out, ref, bytes) == 0, "Allreduce %s %s count %d in_place %d", t->name, OpName(op), count, in_place);
  free(send);
  free(out);
  free(ref);
}

static void CheckReduce(MPI_Comm comm, const TestType* t, MPI_Op op, int count, int root, int in_place) {
  int rank;
  MPI_Comm_rank(comm, &rank);
  const size_t bytes = (size_t)count * t->size;
  char* send = Alloc(bytes);
  char* out = Alloc(bytes);
  char* ref = Alloc(bytes);
  Fill(send, t, count, rank, 2);
  if (in_place && rank == root) {
    memcpy(out, send, bytes);
    memcpy(ref, send, bytes);
    CHECK(MPI_Reduce(MPI_IN_PLACE, out, count, t->type, op, root, comm) == MPI_SUCCESS, "Reduce rc");
    PMPI_Reduce(MPI_IN_PLACE, ref, count, t->type, op, root, comm);
  } else {
    CHECK(MPI_Reduce(send, out, count, t->type, op, root, comm) == MPI_SUCCESS, "Reduce rc");
    PMPI_Reduce(send, ref, count, t->type, op, root, comm);
  }
  if (rank == root) {
    CHECK(memcmp(out, ref, bytes) == 0, "Reduce %s %s count %d root %d in_place %d", t->name, OpName(op), count,
          root, in_place);
  }
  free(send);
  free(out);
  free(ref);
}

static void CheckReduceScatterBlock(MPI_Comm comm, const TestType* t, MPI_Op op, int count, int in_place) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const size_t all = (size_t)count * size * t->size;
  char* send = Alloc(all);
  char* out = Alloc(all);
  char* ref = Alloc(all);
  Fill(send, t, (long)count * size, rank, 3);
  if (in_place) {
    memcpy(out, send, all);
    memcpy(ref, send, all);
    CHECK(MPI_Reduce_scatter_block(MPI_IN_PLACE, out, count, t->type, op, comm) == MPI_SUCCESS, "rc");
    PMPI_Reduce_scatter_block(MPI_IN_PLACE, ref, count, t->type, op, comm);
  } else {
    CHECK(MPI_Reduce_scatter_block(send, out, count, t->type, op, comm) == MPI_SUCCESS, "rc");
    PMPI_Reduce_scatter_block(send, ref, count, t->type, op, comm);
  }
  CHECK(memcmp(out, ref, (size_t)count * t->size) == 0, "Reduce_scatter_block %s %s count %d in_place %d", t->name,
        OpName(op), count, in_place);
  free(send);
  free(out);
  free(ref);
}

static void CheckBcast(MPI_Comm comm, const TestType* t, int count, int root) {
  int rank;
  MPI_Comm_rank(comm, &rank);
  const size_t bytes = (size_t)count * t->size;
  char* out = Alloc(bytes);
  char* ref = Alloc(bytes);
  Fill(out, t, count, rank, 4);
  memcpy(ref, out, bytes);
  CHECK(MPI_Bcast(out, count, t->type, root, comm) == MPI_SUCCESS, "Bcast rc");
  PMPI_Bcast(ref, count, t->type, root, comm);
  CHECK(memcmp(out, ref, bytes) == 0, "Bcast %s count %d root %d", t->name, count, root);
  free(out);
  free(ref);
}

static void CheckAllgather(MPI_Comm comm, const TestType* t, int count, int in_place) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const size_t block = (size_t)count * t->size;
  char* send = Alloc(block);
  char* out = Alloc(block * size);
  char* ref = Alloc(block * size);
  Fill(send, t, count, rank, 5);
  if (in_place) {
    memcpy(out + rank * block, send, block);
    memcpy(ref + rank * block, send, block);
    CHECK(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, out, count, t->type, comm) == MPI_SUCCESS, "rc");
    PMPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ref, count, t->type, comm);
  } else {
    CHECK(MPI_Allgather(send, count, t->type, out, count, t->type, comm) == MPI_SUCCESS, "rc");
    PMPI_Allgather(send, count, t->type, ref, count, t->type, comm);
  }
  CHECK(memcmp(out, ref, block * size) == 0, "Allgather %s count %d in_place %d", t->name, count, in_place);
  free(send);
  free(out);
  free(ref);
}

static void CheckAlltoall(MPI_Comm comm, const TestType* t, int count, int in_place) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const size_t all = (size_t)count * size * t->size;
  char* send = Alloc(all);
  char* out = Alloc(all);
  char* ref = Alloc(all);
  Fill(send, t, (long)count * size, rank, 6);
  if (in_place) {
    memcpy(out, send, all);
    memcpy(ref, send, all);
    CHECK(MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, out, count, t->type, comm) == MPI_SUCCESS, "rc");
    PMPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ref, count, t->type, comm);
  } else {
    CHECK(MPI_Alltoall(send, count, t->type, out, count, t->type, comm) == MPI_SUCCESS, "rc");
    PMPI_Alltoall(send, count, t->type, ref, count, t->type, comm);
  }
  CHECK(memcmp(out, ref, all) == 0, "Alltoall %s count %d in_place %d", t->name, count, in_place);
  free(send);
  free(out);
  free(ref);
}

static void CheckGather(MPI_Comm comm, const TestType* t, int count, int root, int in_place) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const size_t block = (size_t)count * t->size;
  char* send = Alloc(block);
  char* out = Alloc(block * size);
  char* ref = Alloc(block * size);
  Fill(send, t, count, rank, 7);
  if (in_place && rank == root) {
    memcpy(out + rank * block, send, block);
    memcpy(ref + rank * block, send, block);
    CHECK(MPI_Gather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, out, count, t->type, root, comm) == MPI_SUCCESS, "rc");
    PMPI_Gather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ref, count, t->type, root, comm);
  } else {
    CHECK(MPI_Gather(send, count, t->type, out, count, t->type, root, comm) == MPI_SUCCESS, "rc");
    PMPI_Gather(send, count, t->type, ref, count, t->type, root, comm);
  }
  if (rank == root) {
    CHECK(memcmp(out, ref, block * size) == 0, "Gather %s count %d root %d in_place %d", t->name, count, root,
          in_place);
  }
  free(send);
  free(out);
  free(ref);
}

static void CheckScatter(MPI_Comm comm, const TestType* t, int count, int root, int in_place) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const size_t block = (size_t)count * t->size;
  char* send = Alloc(block * size);
  char* out = Alloc(block);
  char* ref = Alloc(block);
  Fill(send, t, (long)count * size, rank, 8);
  if (in_place && rank == root) {
    CHECK(MPI_Scatter(send, count, t->type, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, root, comm) == MPI_SUCCESS, "rc");
    PMPI_Scatter(send, count, t->type, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, root, comm);
  } else {
    CHECK(MPI_Scatter(send, count, t->type, out, count, t->type, root, comm) == MPI_SUCCESS, "rc");
    PMPI_Scatter(send, count, t->type, ref, count, t->type, root, comm);
    CHECK(memcmp(out, ref, block) == 0, "Scatter %s count %d root %d", t->name, count, root);
  }
  free(send);
  free(out);
  free(ref);
}

static double Now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Nobody leaves the barrier before the last rank entered it. */
static void CheckBarrier(MPI_Comm comm) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  usleep((useconds_t)(rank * 20000));
  double entered = Now();
  CHECK(MPI_Barrier(comm) == MPI_SUCCESS, "Barrier rc");
  const double left = Now();
  double last_entry = 0;
  PMPI_Allreduce(&entered, &last_entry, 1, MPI_DOUBLE, MPI_MAX, comm);
  CHECK(left >= last_entry, "Barrier: left at %.6f before the last rank entered at %.6f", left, last_entry);
}

static void BlockingCollectives(MPI_Comm comm) {
  int size;
  MPI_Comm_size(comm, &size);
  for (int ti = 0; ti < ntypes; ++ti) {
    const TestType* t = &types[ti];
    for (int ci = 0; ci < 3; ++ci) {
      const int count = counts[ci];
      for (int in_place = 0; in_place < 2; ++in_place) {
        if (t->reducible) {
          for (int oi = 0; oi < 4; ++oi) {
            if (t->reducible == 2 && ops[oi] != MPI_SUM) continue;
            CheckAllreduce(comm, t, ops[oi], count, in_place);
            CheckReduceScatterBlock(comm, t, ops[oi], count, in_place);
            for (int root = 0; root < size; root += size - 1) {
              CheckReduce(comm, t, ops[oi], count, root, in_place);
              if (size == 1) break;
            }
          }
        }
        CheckAllgather(comm, t, count, in_place);
        CheckAlltoall(comm, t, count, in_place);
        for (int root = 0; root < size; ++root) {
          CheckGather(comm, t, count, root, in_place);
          CheckScatter(comm, t, count, root, in_place);
          if (!in_place) CheckBcast(comm, t, count, root);
        }
      }
    }
  }
  /* Larger than the shared-memory board and a few pipeline chunks. */
  CheckAllreduce(comm, Find(MPI_FLOAT), MPI_SUM, 3 << 20, 0);
  CheckAllreduce(comm, Find(MPI_DOUBLE), MPI_MAX, 1 << 20, 1);
  CheckBcast(comm, Find(MPI_BYTE), 5 << 20, size - 1);
  CheckAllgather(comm, Find(MPI_INT), 1 << 18, 1);
  CheckReduceScatterBlock(comm, Find(MPI_INT), MPI_SUM, 1 << 18, 1);
  /* Empty calls. */
  CheckAllreduce(comm, Find(MPI_INT), MPI_SUM, 0, 0);
  CheckBcast(comm, Find(MPI_INT), 0, 0);
  CheckBarrier(comm);
}

/* ---- derived datatypes: staged through MPI_Pack ------------------------ */

static void DerivedDatatypes(MPI_Comm comm) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const TestType* dbl = Find(MPI_DOUBLE);

  /* Every other double, on every rank. */
  MPI_Datatype every_other;
  MPI_Type_vector(50, 1, 2, MPI_DOUBLE, &every_other);
  MPI_Type_commit(&every_other);
  {
    double out[100], ref[100];
    Fill(out, dbl, 100, rank, 9);
    memcpy(ref, out, sizeof(out));
    CHECK(MPI_Bcast(out, 1, every_other, 0, comm) == MPI_SUCCESS, "rc");
    PMPI_Bcast(ref, 1, every_other, 0, comm);
    CHECK(memcmp(out, ref, sizeof(out)) == 0, "Bcast of a vector type");
  }

  /* The same data described differently: a contiguous type of 64 ints on
   * the root, 64 MPI_INTs elsewhere. */
  MPI_Datatype ints64;
  MPI_Type_contiguous(64, MPI_INT, &ints64);
  MPI_Type_commit(&ints64);
  {
    int out[64], ref[64];
    Fill(out, Find(MPI_INT), 64, rank, 10);
    memcpy(ref, out, sizeof(out));
    if (rank == 0) {
      CHECK(MPI_Bcast(out, 1, ints64, 0, comm) == MPI_SUCCESS, "rc");
      PMPI_Bcast(ref, 1, ints64, 0, comm);
    } else {
      CHECK(MPI_Bcast(out, 64, MPI_INT, 0, comm) == MPI_SUCCESS, "rc");
      PMPI_Bcast(ref, 64, MPI_INT, 0, comm);
    }
    CHECK(memcmp(out, ref, sizeof(out)) == 0, "Bcast with different datatypes on root and others");
  }

  /* Gather 4 doubles per rank into the columns of a 4 x size matrix: the
   * root receives with a resized vector, everybody sends MPI_DOUBLE. */
  MPI_Datatype column, column_resized;
  MPI_Type_vector(4, 1, size, MPI_DOUBLE, &column);
  MPI_Type_create_resized(column, 0, sizeof(double), &column_resized);
  MPI_Type_commit(&column_resized);
  for (int root = 0; root < size; ++root) {
    for (int in_place = 0; in_place < 2; ++in_place) {
      double send[4];
      double* out = Alloc(sizeof(double) * 4 * size);
      double* ref = Alloc(sizeof(double) * 4 * size);
      Fill(send, dbl, 4, rank, 11);
      if (in_place && rank == root) {
        for (int i = 0; i < 4; ++i) out[i * size + rank] = ref[i * size + rank] = send[i];
        CHECK(MPI_Gather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, out, 1, column_resized, root, comm) == MPI_SUCCESS,
              "rc");
        PMPI_Gather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ref, 1, column_resized, root, comm);
      } else {
        CHECK(MPI_Gather(send, 4, MPI_DOUBLE, out, 1, column_resized, root, comm) == MPI_SUCCESS, "rc");
        PMPI_Gather(send, 4, MPI_DOUBLE, ref, 1, column_resized, root, comm);
      }
      if (rank == root) {
        CHECK(memcmp(out, ref, sizeof(double) * 4 * size) == 0, "Gather into columns, root %d in_place %d", root,
              in_place);
      }
      /* And back: scatter the columns. */
      double got[4], want[4];
      if (rank == root) Fill(out, dbl, 4 * size, rank, 12);
      CHECK(MPI_Scatter(out, 1, column_resized, got, 4, MPI_DOUBLE, root, comm) == MPI_SUCCESS, "rc");
      PMPI_Scatter(out, 1, column_resized, want, 4, MPI_DOUBLE, root, comm);
      CHECK(memcmp(got, want, sizeof(got)) == 0, "Scatter of columns, root %d", root);
      free(out);
      free(ref);
    }
  }

  /* Allgather and Alltoall into a column layout on every rank. */
  {
    double send[4];
    double* out = Alloc(sizeof(double) * 4 * size);
    double* ref = Alloc(sizeof(double) * 4 * size);
    Fill(send, dbl, 4, rank, 13);
    CHECK(MPI_Allgather(send, 4, MPI_DOUBLE, out, 1, column_resized, comm) == MPI_SUCCESS, "rc");
    PMPI_Allgather(send, 4, MPI_DOUBLE, ref, 1, column_resized, comm);
    CHECK(memcmp(out, ref, sizeof(double) * 4 * size) == 0, "Allgather into columns");
    for (int i = 0; i < 4; ++i) out[i * size + rank] = ref[i * size + rank] = send[i];
    CHECK(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, out, 1, column_resized, comm) == MPI_SUCCESS, "rc");
    PMPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ref, 1, column_resized, comm);
    CHECK(memcmp(out, ref, sizeof(double) * 4 * size) == 0, "Allgather in place into columns");
    double* matrix = Alloc(sizeof(double) * 4 * size);
    Fill(matrix, dbl, 4 * size, rank, 14);
    CHECK(MPI_Alltoall(matrix, 1, column_resized, out, 4, MPI_DOUBLE, comm) == MPI_SUCCESS, "rc");
    PMPI_Alltoall(matrix, 1, column_resized, ref, 4, MPI_DOUBLE, comm);
    CHECK(memcmp(out, ref, sizeof(double) * 4 * size) == 0, "Alltoall of columns");
    free(matrix);
    free(out);
    free(ref);
  }

  /* A reduction on a derived datatype passes to MPI, which rejects a
   * predefined op on it: the same error as without the interposer. */
  {
    double send[128], out[128];
    MPI_Datatype pairs;
    MPI_Comm errors_return;
    MPI_Comm_dup(comm, &errors_return);
    MPI_Comm_set_errhandler(errors_return, MPI_ERRORS_RETURN);
    MPI_Type_contiguous(2, MPI_DOUBLE, &pairs);
    MPI_Type_commit(&pairs);
    Fill(send, dbl, 128, rank, 15);
    const int rc = MPI_Allreduce(send, out, 64, pairs, MPI_SUM, errors_return);
    const int ref_rc = PMPI_Allreduce(send, out, 64, pairs, MPI_SUM, errors_return);
    int error_class = -1, ref_class = -2;
    MPI_Error_class(rc, &error_class);
    MPI_Error_class(ref_rc, &ref_class);
    CHECK(error_class == ref_class, "Allreduce of a derived datatype: class %d, MPI says %d", error_class, ref_class);
    MPI_Type_free(&pairs);
    MPI_Comm_free(&errors_return);
  }
  MPI_Type_free(&every_other);
  MPI_Type_free(&ints64);
  MPI_Type_free(&column);
  MPI_Type_free(&column_resized);
}

/* ---- calls that pass to MPI -------------------------------------------- */

static void UserSum(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)type;
  for (int i = 0; i < *len; ++i) ((int*)inout)[i] += ((int*)in)[i];
}

static void Fallbacks(MPI_Comm comm) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int send[100], out[100], ref[100];
  Fill(send, Find(MPI_INT), 100, rank, 16);

  MPI_Op user_sum;
  MPI_Op_create(UserSum, 1, &user_sum);
  CHECK(MPI_Allreduce(send, out, 100, MPI_INT, user_sum, comm) == MPI_SUCCESS, "rc");
  PMPI_Allreduce(send, ref, 100, MPI_INT, MPI_SUM, comm);
  CHECK(memcmp(out, ref, sizeof(out)) == 0, "Allreduce with a user op");
  MPI_Request request;
  CHECK(MPI_Iallreduce(send, out, 100, MPI_INT, user_sum, comm, &request) == MPI_SUCCESS, "rc");
  CHECK(MPI_Wait(&request, MPI_STATUS_IGNORE) == MPI_SUCCESS && request == MPI_REQUEST_NULL, "Wait");
  CHECK(memcmp(out, ref, sizeof(out)) == 0, "Iallreduce with a user op");
  MPI_Op_free(&user_sum);

  CHECK(MPI_Allreduce(send, out, 100, MPI_INT, MPI_BAND, comm) == MPI_SUCCESS, "rc");
  PMPI_Allreduce(send, ref, 100, MPI_INT, MPI_BAND, comm);
  CHECK(memcmp(out, ref, sizeof(out)) == 0, "Allreduce MPI_BAND");

  struct {
    int value, index;
  } pair_in = {send[0] * 10 + rank, rank}, pair_out, pair_ref;
  CHECK(MPI_Allreduce(&pair_in, &pair_out, 1, MPI_2INT, MPI_MAXLOC, comm) == MPI_SUCCESS, "rc");
  PMPI_Allreduce(&pair_in, &pair_ref, 1, MPI_2INT, MPI_MAXLOC, comm);
  CHECK(memcmp(&pair_out, &pair_ref, sizeof(pair_out)) == 0, "Allreduce MPI_MAXLOC");

  /* MPI_COMM_SELF: one rank, nothing for Chorus to do. */
  CHECK(MPI_Allreduce(send, out, 100, MPI_INT, MPI_SUM, MPI_COMM_SELF) == MPI_SUCCESS, "rc");
  CHECK(memcmp(out, send, sizeof(out)) == 0, "Allreduce on MPI_COMM_SELF");
  CHECK(MPI_Bcast(out, 100, MPI_INT, 0, MPI_COMM_SELF) == MPI_SUCCESS, "rc");

  /* An inter-communicator between the lower and the upper half. */
  if (size >= 2) {
    const int upper = rank >= size / 2;
    MPI_Comm half, inter;
    MPI_Comm_split(comm, upper, rank, &half);
    MPI_Intercomm_create(half, 0, comm, upper ? 0 : size / 2, 77, &inter);
    int mine = rank + 1, total = 0, total_ref = 0;
    CHECK(MPI_Allreduce(&mine, &total, 1, MPI_INT, MPI_SUM, inter) == MPI_SUCCESS, "rc");
    PMPI_Allreduce(&mine, &total_ref, 1, MPI_INT, MPI_SUM, inter);
    CHECK(total == total_ref, "Allreduce on an inter-communicator: %d vs %d", total, total_ref);
    CHECK(MPI_Barrier(inter) == MPI_SUCCESS, "Barrier on an inter-communicator");
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
  }
}

/* ---- non-blocking calls mixed with point-to-point requests ------------- */

static void NonBlocking(MPI_Comm comm) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  enum { N = 5000 };
  const TestType* flt = Find(MPI_FLOAT);
  float* send = Alloc(sizeof(float) * N);
  float* out = Alloc(sizeof(float) * N);
  float* ref = Alloc(sizeof(float) * N);
  float* inplace = Alloc(sizeof(float) * N);
  char* bcast = Alloc(N);
  char* bcast_ref = Alloc(N);
  Fill(send, flt, N, rank, 17);
  PMPI_Allreduce(send, ref, N, MPI_FLOAT, MPI_SUM, comm);
  memset(bcast, rank, N);
  memset(bcast_ref, size - 1, N);

  /* Wait. */
  MPI_Request r;
  CHECK(MPI_Iallreduce(send, out, N, MPI_FLOAT, MPI_SUM, comm, &r) == MPI_SUCCESS, "rc");
  CHECK(r != MPI_REQUEST_NULL, "a live request");
  MPI_Status status;
  CHECK(MPI_Wait(&r, &status) == MPI_SUCCESS && r == MPI_REQUEST_NULL, "Wait");
  CHECK(memcmp(out, ref, sizeof(float) * N) == 0, "Iallreduce + Wait");

  /* Test until done, in place. */
  memcpy(inplace, send, sizeof(float) * N);
  CHECK(MPI_Iallreduce(MPI_IN_PLACE, inplace, N, MPI_FLOAT, MPI_SUM, comm, &r) == MPI_SUCCESS, "rc");
  int flag = 0, rc = MPI_SUCCESS;
  while (!flag && rc == MPI_SUCCESS) rc = MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
  CHECK(rc == MPI_SUCCESS && r == MPI_REQUEST_NULL && memcmp(inplace, ref, sizeof(float) * N) == 0, "Iallreduce in place + Test");

  /* Waitall over Irecv, Iallreduce, Isend, Ibcast, MPI_REQUEST_NULL; with
   * statuses and with MPI_STATUSES_IGNORE. */
  for (int ignore = 0; ignore < 2; ++ignore) {
    int token_in = -1, token_out = rank;
    MPI_Request requests[5];
    MPI_Status statuses[5];
    memset(out, 0, sizeof(float) * N);
    memset(bcast, rank, N);
    MPI_Irecv(&token_in, 1, MPI_INT, left, 5, comm, &requests[0]);
    MPI_Iallreduce(send, out, N, MPI_FLOAT, MPI_SUM, comm, &requests[1]);
    MPI_Isend(&token_out, 1, MPI_INT, right, 5, comm, &requests[2]);
    MPI_Ibcast(bcast, N, MPI_CHAR, size - 1, comm, &requests[3]);
    requests[4] = MPI_REQUEST_NULL;
    CHECK(MPI_Waitall(5, requests, ignore ? MPI_STATUSES_IGNORE : statuses) == MPI_SUCCESS, "Waitall rc");
    for (int i = 0; i < 5; ++i) CHECK(requests[i] == MPI_REQUEST_NULL, "Waitall request %d freed", i);
    CHECK(token_in == left, "Irecv in Waitall got %d", token_in);
    if (!ignore) CHECK(statuses[0].MPI_SOURCE == left && statuses[0].MPI_TAG == 5, "Irecv status in Waitall");
    CHECK(memcmp(out, ref, sizeof(float) * N) == 0, "Iallreduce in Waitall");
    CHECK(memcmp(bcast, bcast_ref, N) == 0, "Ibcast in Waitall");
  }

  /* Waitany until all are done. */
  {
    int token_in = -1, token_out = rank;
    MPI_Request requests[3];
    memset(out, 0, sizeof(float) * N);
    memset(bcast, rank, N);
    MPI_Iallreduce(send, out, N, MPI_FLOAT, MPI_SUM, comm, &requests[0]);
    MPI_Irecv(&token_in, 1, MPI_INT, left, 6, comm, &requests[1]);
    MPI_Ibcast(bcast, N, MPI_CHAR, size - 1, comm, &requests[2]);
    MPI_Send(&token_out, 1, MPI_INT, right, 6, comm);
    int seen[3] = {0, 0, 0};
    for (int k = 0; k < 3; ++k) {
      int index = -1;
      MPI_Status st;
      CHECK(MPI_Waitany(3, requests, &index, &st) == MPI_SUCCESS, "Waitany rc");
      CHECK(index >= 0 && index < 3 && !seen[index], "Waitany index %d", index);
      if (index >= 0 && index < 3) seen[index] = 1;
      if (index == 1) CHECK(st.MPI_SOURCE == left, "Waitany Irecv status");
    }
    int index = 0;
    CHECK(MPI_Waitany(3, requests, &index, MPI_STATUS_IGNORE) == MPI_SUCCESS && index == MPI_UNDEFINED,
          "Waitany on null requests");
    CHECK(token_in == left && memcmp(out, ref, sizeof(float) * N) == 0 && memcmp(bcast, bcast_ref, N) == 0,
          "Waitany results");
  }

  /* Testall, Testany and Waitsome. */
  {
    int token_in = -1, token_out = rank;
    MPI_Request requests[2];
    memset(out, 0, sizeof(float) * N);
    MPI_Iallreduce(send, out, N, MPI_FLOAT, MPI_SUM, comm, &requests[0]);
    MPI_Irecv(&token_in, 1, MPI_INT, left, 7, comm, &requests[1]);
    MPI_Send(&token_out, 1, MPI_INT, right, 7, comm);
    flag = 0;
    int partial = 0;
    while (!flag && rc == MPI_SUCCESS) {
      rc = MPI_Testall(2, requests, &flag, MPI_STATUSES_IGNORE);
      if (!flag && (requests[0] == MPI_REQUEST_NULL || requests[1] == MPI_REQUEST_NULL)) partial = 1;
    }
    CHECK(rc == MPI_SUCCESS && !partial, "Testall: rc %d, completed only part: %d", rc, partial);
    CHECK(requests[0] == MPI_REQUEST_NULL && requests[1] == MPI_REQUEST_NULL, "Testall freed both");
    CHECK(token_in == left && memcmp(out, ref, sizeof(float) * N) == 0, "Testall results");

    memset(out, 0, sizeof(float) * N);
    MPI_Iallreduce(send, out, N, MPI_FLOAT, MPI_SUM, comm, &requests[0]);
    MPI_Irecv(&token_in, 1, MPI_INT, left, 8, comm, &requests[1]);
    MPI_Send(&token_out, 1, MPI_INT, right, 8, comm);
    int done = 0;
    while (done < 2 && rc == MPI_SUCCESS) {
      int index = -1;
      flag = 0;
      rc = MPI_Testany(2, requests, &index, &flag, MPI_STATUS_IGNORE);
      if (flag) ++done;
    }
    CHECK(rc == MPI_SUCCESS, "Testany rc %d", rc);
    CHECK(memcmp(out, ref, sizeof(float) * N) == 0, "Testany results");

    memset(out, 0, sizeof(float) * N);
    MPI_Iallreduce(send, out, N, MPI_FLOAT, MPI_SUM, comm, &requests[0]);
    MPI_Irecv(&token_in, 1, MPI_INT, left, 9, comm, &requests[1]);
    MPI_Send(&token_out, 1, MPI_INT, right, 9, comm);
    done = 0;
    while (done < 2) {
      int outcount = 0, indices[2];
      MPI_Status statuses[2];
      CHECK(MPI_Waitsome(2, requests, &outcount, indices, statuses) == MPI_SUCCESS, "Waitsome rc");
      CHECK(outcount >= 1 && outcount <= 2, "Waitsome outcount %d", outcount);
      done += outcount;
    }
    CHECK(memcmp(out, ref, sizeof(float) * N) == 0, "Waitsome results");
  }

  /* Several in flight, and a blocking call on the same communicator
   * between issue and wait. */
  {
    enum { K = 6 };
    MPI_Request requests[K];
    float* outs = Alloc(sizeof(float) * N * K);
    for (int k = 0; k < K; ++k) MPI_Iallreduce(send, outs + (size_t)k * N, N, MPI_FLOAT, MPI_SUM, comm, &requests[k]);
    int x = rank, sum = 0;
    CHECK(MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, comm) == MPI_SUCCESS && sum == size * (size - 1) / 2,
          "blocking Allreduce between issue and wait");
    CHECK(MPI_Waitall(K, requests, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "Waitall rc");
    for (int k = 0; k < K; ++k) CHECK(memcmp(outs + (size_t)k * N, ref, sizeof(float) * N) == 0, "in flight %d", k);
    free(outs);
  }

  /* Ibcast of a vector type (staged, unpacked at completion). */
  {
    double vec[40], vec_ref[40];
    MPI_Datatype every_other;
    MPI_Type_vector(20, 1, 2, MPI_DOUBLE, &every_other);
    MPI_Type_commit(&every_other);
    Fill(vec, Find(MPI_DOUBLE), 40, rank, 18);
    memcpy(vec_ref, vec, sizeof(vec));
    MPI_Ibcast(vec, 1, every_other, 0, comm, &r);
    PMPI_Bcast(vec_ref, 1, every_other, 0, comm);
    CHECK(MPI_Wait(&r, MPI_STATUS_IGNORE) == MPI_SUCCESS, "rc");
    CHECK(memcmp(vec, vec_ref, sizeof(vec)) == 0, "Ibcast of a vector type");
    MPI_Type_free(&every_other);
  }
  free(send);
  free(out);
  free(ref);
  free(inplace);
  free(bcast);
  free(bcast_ref);
}

/* ---- MPI progress while a rank waits in Chorus ------------------------- */

/* Rank 1's large (rendezvous) send completes only while rank 0 is inside
 * MPI, and rank 0 is inside a collective that waits for rank 1: legal MPI
 * (Open MPI progresses the receive inside the collective), which must not
 * deadlock when Chorus serves the collective. Once with a blocking
 * Allreduce, once with an Iallreduce that rank 0 waits for. */
static void ProgressInsideCollectives(MPI_Comm comm) {
  int rank;
  MPI_Comm_rank(comm, &rank);
  enum { kBytes = 4 << 20 };
  char* message = Alloc(kBytes);
  for (int nonblocking = 0; nonblocking < 2; ++nonblocking) {
    int x = 1, sum = 0, size = 0;
    MPI_Comm_size(comm, &size);
    MPI_Request request = MPI_REQUEST_NULL, collective = MPI_REQUEST_NULL;
    if (rank == 0) {
      memset(message, 0, kBytes);
      MPI_Irecv(message, kBytes, MPI_CHAR, 1, 11, comm, &request);
      if (nonblocking) {
        MPI_Iallreduce(&x, &sum, 1, MPI_INT, MPI_SUM, comm, &collective);
        CHECK(MPI_Wait(&collective, MPI_STATUS_IGNORE) == MPI_SUCCESS, "Wait rc");
      } else {
        CHECK(MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, comm) == MPI_SUCCESS, "Allreduce rc");
      }
      MPI_Wait(&request, MPI_STATUS_IGNORE);
      CHECK(message[0] == 7 && message[kBytes - 1] == 7, "the large message arrived");
    } else {
      if (rank == 1) {
        memset(message, 7, kBytes);
        MPI_Send(message, kBytes, MPI_CHAR, 0, 11, comm);
      }
      if (nonblocking) {
        MPI_Iallreduce(&x, &sum, 1, MPI_INT, MPI_SUM, comm, &collective);
        MPI_Wait(&collective, MPI_STATUS_IGNORE);
      } else {
        MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, comm);
      }
    }
    CHECK(sum == size, "Allreduce beside a rendezvous send: %d", sum);
  }
  free(message);
}

/* ---- communicators made and freed -------------------------------------- */

static void Communicators(void) {
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  /* A split (even and odd ranks) runs the whole blocking set. */
  MPI_Comm split;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &split);
  int split_size = 0;
  MPI_Comm_size(split, &split_size);
  for (int i = 0; i < 3; ++i) {
    CheckAllreduce(split, Find(MPI_INT), MPI_SUM, 1000, i % 2);
    CheckBcast(split, Find(MPI_DOUBLE), 100, split_size - 1);
    CheckGather(split, Find(MPI_INT), 10, 0, 0);
  }
  MPI_Comm_free(&split);

  /* Freed and made again with other members every round: MPI may hand out
   * a freed handle again, and the new communicator must not run on the old
   * one's Chorus communicator (the interposer caches each thread's last
   * lookup). */
  for (int round = 0; round < 6; ++round) {
    MPI_Comm regrouped;
    MPI_Comm_split(MPI_COMM_WORLD, (rank + round) / 2 % 2, rank, &regrouped);
    CheckAllreduce(regrouped, Find(MPI_INT), MPI_SUM, 100, 0);
    MPI_Comm_free(&regrouped);
  }

  /* Duplicates and MPI_Comm_create, made and freed several times. */
  for (int round = 0; round < 3; ++round) {
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    CheckAllreduce(dup, Find(MPI_DOUBLE), MPI_MAX, 500, 0);
    CheckAlltoall(dup, Find(MPI_INT), 10, 0);
    MPI_Group world_group, pair_group;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    const int members[2] = {0, 1};
    MPI_Group_incl(world_group, 2, members, &pair_group);
    MPI_Comm pair;
    MPI_Comm_create(dup, pair_group, &pair);
    if (pair != MPI_COMM_NULL) {
      CheckAllreduce(pair, Find(MPI_FLOAT), MPI_SUM, 100, 1);
      MPI_Comm_free(&pair);
    }
    MPI_Group_free(&pair_group);
    MPI_Group_free(&world_group);
    MPI_Comm_free(&dup);
  }
}

/* ---- a late rank: errors through MPI_ERRORS_RETURN --------------------- */

static void Errors(void) {
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int x = 1, y = 0;
  CHECK(MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS, "first Allreduce");
  if (rank == 1) sleep(3); /* longer than CHORUS_TIMEOUT_MS (1000 in the test) */
  const double start = Now();
  const int rc = MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  const double waited = Now() - start;
  int error_class = MPI_SUCCESS;
  if (rc != MPI_SUCCESS) MPI_Error_class(rc, &error_class);
  char text[MPI_MAX_ERROR_STRING] = "";
  int length = 0;
  if (rc != MPI_SUCCESS) MPI_Error_string(rc, text, &length);
  if (rank == 0) {
    /* The rank that waited in vain gets an error through the handler. */
    CHECK(rc != MPI_SUCCESS && error_class == MPI_ERR_OTHER, "rank %d: rc %d class %d", rank, rc, error_class);
    CHECK(strstr(text, "Chorus") != NULL, "error string '%s'", text);
  } else if (rc != MPI_SUCCESS) {
    /* The late one may still find rank 0's contribution and succeed. */
    CHECK(error_class == MPI_ERR_OTHER, "rank %d: rc %d class %d", rank, rc, error_class);
  }
  CHECK(waited < 20, "the failed call took %.1f s", waited);
  printf("rank %d: late-rank Allreduce returned %d after %.1f s: %s\n", rank, rc, waited, text);
}

/* ---- threads: MPI_THREAD_MULTIPLE, a communicator per thread ---------- */

static void* ThreadBody(void* arg) {
  MPI_Comm comm = *(MPI_Comm*)arg;
  int rank;
  MPI_Comm_rank(comm, &rank);
  const TestType* flt = Find(MPI_FLOAT);
  enum { N = 2000 };
  float send[N], out[N], ref[N];
  Fill(send, flt, N, rank, 19);
  PMPI_Allreduce(send, ref, N, MPI_FLOAT, MPI_SUM, comm);
  for (int i = 0; i < 100; ++i) {
    memset(out, 0, sizeof(out));
    CHECK(MPI_Allreduce(send, out, N, MPI_FLOAT, MPI_SUM, comm) == MPI_SUCCESS, "rc");
    CHECK(memcmp(out, ref, sizeof(out)) == 0, "Allreduce on a thread's communicator, round %d", i);
    MPI_Request request;
    memset(out, 0, sizeof(out));
    MPI_Iallreduce(send, out, N, MPI_FLOAT, MPI_SUM, comm, &request);
    CHECK(MPI_Wait(&request, MPI_STATUS_IGNORE) == MPI_SUCCESS, "rc");
    CHECK(memcmp(out, ref, sizeof(out)) == 0, "Iallreduce on a thread's communicator, round %d", i);
    CHECK(MPI_Barrier(comm) == MPI_SUCCESS, "rc");
  }
  return NULL;
}

/* Three threads, each on its own duplicate of MPI_COMM_WORLD, at once:
 * communicator creation, the request registry and the statistics under
 * concurrency. */
static void Threads(void) {
  enum { T = 3 };
  MPI_Comm comms[T];
  pthread_t threads[T];
  for (int t = 0; t < T; ++t) MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
  for (int t = 0; t < T; ++t) pthread_create(&threads[t], NULL, ThreadBody, &comms[t]);
  for (int t = 0; t < T; ++t) pthread_join(threads[t], NULL);
  for (int t = 0; t < T; ++t) MPI_Comm_free(&comms[t]);
}

/* ---- /dev/shm after MPI_Finalize --------------------------------------- */

static int SegmentsOfThisProcess(void) {
  char needle[32];
  snprintf(needle, sizeof(needle), "-%d-", (int)getpid());
  int found = 0;
  DIR* dir = opendir("/dev/shm");
  if (dir == NULL) return 0;
  struct dirent* entry;
  while ((entry = readdir(dir)) != NULL) {
    if (strncmp(entry->d_name, "chorus-shm-", 11) == 0 && strstr(entry->d_name, needle) != NULL) {
      fprintf(stderr, "rank %d: /dev/shm/%s left behind\n", world_rank, entry->d_name);
      ++found;
    }
  }
  closedir(dir);
  return found;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "all";
  int provided = MPI_THREAD_SINGLE;
  if (strcmp(mode, "threads") == 0) {
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  } else {
    MPI_Init(&argc, &argv);
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  printf("rank %d pid %d\n", world_rank, (int)getpid());
  fflush(stdout);
  InitTypes();
  if (strcmp(mode, "all") == 0) {
    BlockingCollectives(MPI_COMM_WORLD);
    DerivedDatatypes(MPI_COMM_WORLD);
    Fallbacks(MPI_COMM_WORLD);
    NonBlocking(MPI_COMM_WORLD);
    ProgressInsideCollectives(MPI_COMM_WORLD);
    Communicators();
  } else if (strcmp(mode, "errors") == 0 && size == 2) {
    Errors();
  } else if (strcmp(mode, "threads") == 0) {
    if (provided == MPI_THREAD_MULTIPLE) Threads();
    else if (world_rank == 0) printf("no MPI_THREAD_MULTIPLE: threads skipped\n");
  } else {
    if (world_rank == 0) fprintf(stderr, "usage: %s all|errors|threads (errors: 2 ranks)\n", argv[0]);
    MPI_Finalize();
    return 2;
  }
  long totals[2] = {checks, failures}, all[2] = {0, 0};
  if (strcmp(mode, "errors") == 0) {
    all[0] = checks; /* the communicator is broken: no collective */
    all[1] = failures;
  } else {
    PMPI_Allreduce(totals, all, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  }
  if (world_rank == 0 || strcmp(mode, "errors") == 0) {
    printf("mpi_interposer_check %s: %ld checks, %ld failed\n", mode, all[0], all[1]);
  }
  MPI_Finalize();
  const int left = SegmentsOfThisProcess();
  printf("rank %d: %d Chorus segments left after MPI_Finalize\n", world_rank, left);
  return (all[1] == 0 && failures == 0 && left == 0) ? 0 : 1;
}
