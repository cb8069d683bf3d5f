// How an entry point of nccl.h is defined: NCCL's own convention, where
// nccl<Name> is a weak symbol and pnccl<Name> an alias of it, so that a
// profiling library can define nccl<Name> and call pnccl<Name>.
#pragma once

#include <nccl.h>

#include "chorus/chorus.h"

#define NCCL_API(ret, func, ...)                                                                   \
  extern "C" __attribute__((visibility("default"))) __attribute__((alias(#func))) ret p##func(    \
      __VA_ARGS__);                                                                                \
  extern "C" __attribute__((visibility("default"))) __attribute__((weak)) ret func(__VA_ARGS__)

namespace chorus_nccl {

// ncclComm_t is Chorus's communicator handle under NCCL's name: Chorus
// already validates handles (NULL, destroyed, aborted) on every call.
inline chorusComm_t ToChorus(ncclComm_t comm) { return reinterpret_cast<chorusComm_t>(comm); }
inline ncclComm_t ToNccl(chorusComm_t comm) { return reinterpret_cast<ncclComm_t>(comm); }

}  // namespace chorus_nccl
