// What classifying a user buffer costs per call (core/pointer_kind.h): the
// C API classifies sendbuff and recvbuff of every call (ClassifyCallBuffers,
// core/buffer_kinds.h, measured whole on a one-rank communicator). ClassifyPointer
// asks the CUDA runtime once per process whether a device exists, so on a
// machine without one each buffer costs a branch; the runtime query it
// would otherwise make per buffer (cudaPointerGetAttributes, then clearing
// its error) is measured beside it, in the same process, interleaved by
// Google Benchmark's repetitions.
#include <benchmark/benchmark.h>

#include <vector>

#include "chorus_build_config.h"
#include "core/buffer_kinds.h"
#include "core/handles.h"
#include "core/pointer_kind.h"

#if CHORUS_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace chorus {
namespace {

// Two buffers per call, as sendbuff and recvbuff.
void BM_ClassifyPointer(benchmark::State& state) {
  std::vector<float> send(2), recv(2);
  for (auto _ : state) {
    benchmark::DoNotOptimize(ClassifyPointer(send.data()));
    benchmark::DoNotOptimize(ClassifyPointer(recv.data()));
  }
}
BENCHMARK(BM_ClassifyPointer);

// The API's whole step: both buffers, the mixed-kind check, the kinds set.
void BM_ClassifyCallBuffers(benchmark::State& state) {
  chorusComm_t comm = nullptr;
  int device = 0;
  if (chorusCommInitAll(&comm, 1, &device) != chorusSuccess) {
    state.SkipWithError("chorusCommInitAll failed");
    return;
  }
  std::vector<float> send(2), recv(2);
  Operation op;
  op.send = send.data();
  op.recv = recv.data();
  for (auto _ : state) {
    benchmark::DoNotOptimize(ClassifyCallBuffers(*comm->impl, &op).ok());
    benchmark::DoNotOptimize(op.send_kind);
  }
  chorusCommDestroy(comm);
}
BENCHMARK(BM_ClassifyCallBuffers);

#if CHORUS_HAVE_CUDA
// What each call paid per buffer without the per-process answer.
void BM_RuntimeQueryPerBuffer(benchmark::State& state) {
  std::vector<float> send(2), recv(2);
  for (auto _ : state) {
    for (const void* pointer : {static_cast<const void*>(send.data()), static_cast<const void*>(recv.data())}) {
      cudaPointerAttributes attributes{};
      if (cudaPointerGetAttributes(&attributes, pointer) != cudaSuccess) cudaGetLastError();
      benchmark::DoNotOptimize(attributes.type);
    }
  }
}
BENCHMARK(BM_RuntimeQueryPerBuffer);
#endif

}  // namespace
}  // namespace chorus

BENCHMARK_MAIN();
