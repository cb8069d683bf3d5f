// ncclGetLastError's text. NCCL keeps the last error per thread whatever
// communicator it concerns, so this does too: the buffer is thread-local
// (per-thread by definition, not shared state).
#pragma once

#include <nccl.h>

#include <string>

#include "chorus/chorus.h"

namespace chorus_nccl {

// Records "<api>: <message>" as this thread's last error and returns `code`.
ncclResult_t Fail(ncclResult_t code, const char* api, const std::string& message);

// Maps a Chorus result. On failure the thread's last error becomes
// "<api>: " followed by Chorus's own message for it.
ncclResult_t FromChorus(chorusResult_t result, const char* api);

// Records a message made on another thread (deferred group work).
void SetLastError(const std::string& text);

const char* LastError();

}  // namespace chorus_nccl
