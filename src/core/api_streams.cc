// Public host-stream entry points (chorusStream*, chorusStreamFromCuda
// included) and chorusPointerGetMemoryKind, which tells a caller whether a
// call on a buffer needs a CUDA-linked stream.
#include <memory>

#include "base/config.h"
#include "chorus_build_config.h"
#include "core/handles.h"
#include "core/pointer_kind.h"

#if CHORUS_HAVE_CUDA
#include "core/cuda_stream_link.h"
#endif

using chorus::InvalidArgument;
using chorus::Status;

extern "C" {

chorusResult_t chorusStreamCreate(chorusStream_t* stream) {
  if (stream == nullptr) return chorus::Report(nullptr, InvalidArgument("chorusStreamCreate: stream is NULL"));
  *stream = new chorusStream();
  return chorusSuccess;
}

chorusResult_t chorusStreamFromCuda(chorusStream_t* stream, void* cuda_stream) {
  if (stream == nullptr) return chorus::Report(nullptr, InvalidArgument("chorusStreamFromCuda: stream is NULL"));
#if CHORUS_HAVE_CUDA
  chorus::Settings settings;
  Status status = chorus::Settings::FromEnvironment(&settings);
  std::unique_ptr<chorus::DeviceStreamLink> link;
  if (status.ok()) status = chorus::MakeCudaStreamLink(cuda_stream, settings.timeout_ms, &link);
  if (!status.ok()) return chorus::Report(nullptr, status);
  *stream = new chorusStream(std::move(link));
  return chorusSuccess;
#else
  (void)cuda_stream;
  return chorus::Report(nullptr, chorus::InvalidUsage("chorusStreamFromCuda: this build of Chorus has no CUDA "
                                                      "support (configure with -Dcuda=enabled where the CUDA "
                                                      "toolkit is installed)"));
#endif
}

chorusResult_t chorusPointerGetMemoryKind(const void* pointer, chorusMemoryKind_t* kind) {
  if (kind == nullptr) return chorus::Report(nullptr, InvalidArgument("chorusPointerGetMemoryKind: kind is NULL"));
  switch (chorus::ClassifyPointer(pointer)) {
    case chorus::MemoryKind::kCudaDevice:
      *kind = chorusMemoryCudaDevice;
      break;
    case chorus::MemoryKind::kCudaHostPinned:
      *kind = chorusMemoryCudaHostPinned;
      break;
    default:
      *kind = chorusMemoryHost;
      break;  // the tests' fake device kind never comes from the runtime
  }
  return chorusSuccess;
}

chorusResult_t chorusStreamSynchronize(chorusStream_t stream) {
  if (stream == nullptr) return chorusSuccess;  // NULL stream calls are blocking
  return chorus::Report(nullptr, stream->stream.Synchronize());
}

chorusResult_t chorusStreamQuery(chorusStream_t stream) {
  if (stream == nullptr) return chorusSuccess;
  Status status = stream->stream.Query();
  if (status.code() == chorusInProgress) return chorusInProgress;
  return chorus::Report(nullptr, status);
}

chorusResult_t chorusStreamDestroy(chorusStream_t stream) {
  if (stream == nullptr) return chorus::Report(nullptr, InvalidArgument("chorusStreamDestroy: stream is NULL"));
  delete stream;  // drains pending work first
  return chorusSuccess;
}

}  // extern "C"
