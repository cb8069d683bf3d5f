/* An NCCL program on CUDA device buffers and CUDA streams, as NCCL programs
 * are written: inputs written by earlier work on the stream, collectives
 * enqueued on it, results read back by later work on it, one
 * cudaStreamSynchronize at the end. Linked with -lnccl and the CUDA runtime;
 * nccl_abi_test runs it with LD_LIBRARY_PATH pointing at Chorus's
 * libnccl.so.2. Each rank first queues a long device-to-device copy, so a
 * collective that did not wait for the stream would read stale inputs.
 *
 *   nccl_device_check threads N   ncclCommInitAll, one thread per rank,
 *                                 every rank on device 0 (or its own when
 *                                 there are N devices)
 *
 * Prints "OK threads N: <checks> checks" and exits 0; names each failed
 * check on stderr and exits 1; prints "SKIP <why>" and exits 77 without a
 * usable CUDA device. */
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kCount = 1 << 20, kMaxRanks = 8 };
static const size_t kDelayBytes = (size_t)256 << 20; /* the long copy queued first */

static ncclComm_t g_comms[kMaxRanks];
static int g_nranks;
static int g_devices;

struct RankResult {
  long checks;
  long failures;
};
static struct RankResult g_results[kMaxRanks];

#define CHECK(rank, cond, ...)                                                     \
  do {                                                                             \
    ++g_results[rank].checks;                                                      \
    if (!(cond)) {                                                                 \
      ++g_results[rank].failures;                                                  \
      fprintf(stderr, "rank %d: %s:%d: check failed: %s: ", rank, __FILE__,        \
              __LINE__, #cond);                                                    \
      fprintf(stderr, __VA_ARGS__);                                                \
      fprintf(stderr, "\n");                                                       \
    }                                                                              \
  } while (0)

#define NCCL_OK(rank, call)                                                        \
  CHECK(rank, (call) == ncclSuccess, "%s: %s", #call, ncclGetLastError(NULL))
#define CUDA_OK(rank, call)                                                        \
  do {                                                                             \
    cudaError_t e_ = (call);                                                       \
    CHECK(rank, e_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(e_));       \
  } while (0)

/* Rank r's input element i: small integers, exact in float sums. */
static float Input(int rank, size_t i) { return (float)((i % 97) + rank * 3); }

static void* RunRank(void* arg) {
  const int rank = (int)(size_t)arg;
  const int n = g_nranks;
  ncclComm_t comm = g_comms[rank];
  CUDA_OK(rank, cudaSetDevice(g_devices >= n ? rank : 0));
  cudaStream_t stream;
  CUDA_OK(rank, cudaStreamCreate(&stream));
  float *send = NULL, *recv = NULL, *gathered = NULL;
  void *delay_a = NULL, *delay_b = NULL;
  CUDA_OK(rank, cudaMalloc((void**)&send, kCount * sizeof(float)));
  CUDA_OK(rank, cudaMalloc((void**)&recv, kCount * sizeof(float)));
  CUDA_OK(rank, cudaMalloc((void**)&gathered, (size_t)n * kCount * sizeof(float)));
  CUDA_OK(rank, cudaMalloc(&delay_a, kDelayBytes));
  CUDA_OK(rank, cudaMalloc(&delay_b, kDelayBytes));
  float* host = (float*)malloc((size_t)n * kCount * sizeof(float));
  float* input = (float*)malloc(kCount * sizeof(float));
  for (size_t i = 0; i < kCount; ++i) input[i] = Input(rank, i);

  /* Stale inputs first, then a long copy, then the real inputs: all on the
   * stream, so only a collective ordered after them sees the real ones. */
  CUDA_OK(rank, cudaMemsetAsync(send, 0, kCount * sizeof(float), stream));
  CUDA_OK(rank, cudaMemcpyAsync(delay_b, delay_a, kDelayBytes, cudaMemcpyDeviceToDevice, stream));
  CUDA_OK(rank, cudaMemcpyAsync(send, input, kCount * sizeof(float), cudaMemcpyHostToDevice, stream));
  CUDA_OK(rank, cudaMemsetAsync(recv, 0xff, kCount * sizeof(float), stream));

  /* AllReduce sum, then AllGather of the inputs, each read back on the stream. */
  NCCL_OK(rank, ncclAllReduce(send, recv, kCount, ncclFloat32, ncclSum, comm, stream));
  float* sums = (float*)malloc(kCount * sizeof(float));
  CUDA_OK(rank, cudaMemcpyAsync(sums, recv, kCount * sizeof(float), cudaMemcpyDeviceToHost, stream));
  NCCL_OK(rank, ncclAllGather(send, gathered, kCount, ncclFloat32, comm, stream));
  CUDA_OK(rank, cudaMemcpyAsync(host, gathered, (size_t)n * kCount * sizeof(float), cudaMemcpyDeviceToHost, stream));
  /* In place: recv += everyone's recv (each holds the sum): n * sum. */
  NCCL_OK(rank, ncclAllReduce(recv, recv, kCount, ncclFloat32, ncclSum, comm, stream));
  float* scaled = (float*)malloc(kCount * sizeof(float));
  CUDA_OK(rank, cudaMemcpyAsync(scaled, recv, kCount * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CUDA_OK(rank, cudaStreamSynchronize(stream));

  long wrong_sum = 0, wrong_gather = 0, wrong_scaled = 0;
  for (size_t i = 0; i < kCount; ++i) {
    float expected = 0;
    for (int r = 0; r < n; ++r) expected += Input(r, i);
    wrong_sum += sums[i] != expected;
    wrong_scaled += scaled[i] != expected * (float)n;
    for (int r = 0; r < n; ++r) wrong_gather += host[(size_t)r * kCount + i] != Input(r, i);
  }
  CHECK(rank, wrong_sum == 0, "%ld wrong allreduce elements (e.g. [0] %g)", wrong_sum, sums[0]);
  CHECK(rank, wrong_gather == 0, "%ld wrong allgather elements", wrong_gather);
  CHECK(rank, wrong_scaled == 0, "%ld wrong in-place allreduce elements", wrong_scaled);

  free(sums);
  free(scaled);
  free(input);
  free(host);
  cudaFree(send);
  cudaFree(recv);
  cudaFree(gathered);
  cudaFree(delay_a);
  cudaFree(delay_b);
  cudaStreamDestroy(stream);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 3 || strcmp(argv[1], "threads") != 0 || atoi(argv[2]) < 2 || atoi(argv[2]) > kMaxRanks) {
    fprintf(stderr, "usage: nccl_device_check threads N (2 <= N <= %d)\n", kMaxRanks);
    return 2;
  }
  g_nranks = atoi(argv[2]);
  const cudaError_t error = cudaGetDeviceCount(&g_devices);
  if (error != cudaSuccess || g_devices == 0) {
    printf("SKIP no usable CUDA device: %s\n", error != cudaSuccess ? cudaGetErrorString(error) : "none found");
    return 77;
  }
  if (ncclCommInitAll(g_comms, g_nranks, NULL) != ncclSuccess) {
    fprintf(stderr, "ncclCommInitAll: %s\n", ncclGetLastError(NULL));
    return 1;
  }
  pthread_t threads[kMaxRanks];
  for (int r = 0; r < g_nranks; ++r) pthread_create(&threads[r], NULL, RunRank, (void*)(size_t)r);
  long checks = 0, failures = 0;
  for (int r = 0; r < g_nranks; ++r) {
    pthread_join(threads[r], NULL);
    checks += g_results[r].checks;
    failures += g_results[r].failures;
  }
  for (int r = 0; r < g_nranks; ++r) ncclCommDestroy(g_comms[r]);
  if (failures != 0) return 1;
  printf("OK threads %d: %ld checks\n", g_nranks, checks);
  return 0;
}
