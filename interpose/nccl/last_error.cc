#include "interpose/nccl/last_error.h"

#include <algorithm>
#include <cstring>

#include "interpose/nccl/mapping.h"

namespace chorus_nccl {
namespace {

char* ThreadLastError() {
  thread_local char text[1024] = "";
  return text;
}

}  // namespace

void SetLastError(const std::string& text) {
  char* dst = ThreadLastError();
  const size_t n = std::min(text.size(), size_t{1023});
  std::memcpy(dst, text.data(), n);
  dst[n] = '\0';
}

ncclResult_t Fail(ncclResult_t code, const char* api, const std::string& message) {
  SetLastError(std::string(api) + ": " + message);
  return code;
}

ncclResult_t FromChorus(chorusResult_t result, const char* api) {
  if (result == chorusSuccess) return ncclSuccess;
  // Chorus records every failure in its own per-thread slot as well.
  std::string text = chorusGetLastError(nullptr);
  if (result == chorusTimeout) text += " (Chorus timed out: CHORUS_TIMEOUT_MS)";
  return Fail(MapResult(result), api, text);
}

const char* LastError() { return ThreadLastError(); }

}  // namespace chorus_nccl
