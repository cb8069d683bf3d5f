#include "interpose/nccl/stream_links.h"

#include <mutex>
#include <unordered_map>

#include "interpose/nccl/last_error.h"

namespace chorus_nccl {
namespace {

bool OnDevice(const void* buffer) {
  chorusMemoryKind_t kind = chorusMemoryHost;
  return buffer != nullptr && chorusPointerGetMemoryKind(buffer, &kind) == chorusSuccess &&
         kind == chorusMemoryCudaDevice;
}

// One linked Chorus stream per cudaStream_t value, made on first use. A
// cudaStream_t names no lifetime this library could follow (NCCL's API
// never says a stream is gone), so the streams live as long as the process:
// freeing one another thread may be enqueuing on is unsafe, and freeing them
// at exit would run after the CUDA runtime's own teardown. A handle value
// reused by a new CUDA stream gets the link of the old one, which records
// and waits on that same handle: the new stream.
class StreamLinks {
 public:
  // Not destroyed (see above): the object outlives every user.
  static StreamLinks& OfProcess() {
    static StreamLinks* links = new StreamLinks();
    return *links;
  }

  chorusResult_t Get(cudaStream_t stream, chorusStream_t* out) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = streams_.find(stream);
    if (found != streams_.end()) {
      *out = found->second;
      return chorusSuccess;
    }
    chorusStream_t made = nullptr;
    const chorusResult_t result = chorusStreamFromCuda(&made, stream);
    if (result != chorusSuccess) return result;
    streams_.emplace(stream, made);
    *out = made;
    return chorusSuccess;
  }

 private:
  std::mutex mutex_;
  std::unordered_map<cudaStream_t, chorusStream_t> streams_;
};

}  // namespace

ncclResult_t StreamForCall(const char* api, cudaStream_t stream, const void* sendbuff, const void* recvbuff,
                           chorusStream_t* out) {
  *out = nullptr;
  if (!OnDevice(sendbuff) && !OnDevice(recvbuff)) return ncclSuccess;
  return FromChorus(StreamLinks::OfProcess().Get(stream, out), api);
}

}  // namespace chorus_nccl
