// Which Chorus stream an NCCL call runs on.
//  - Host buffers: Chorus's NULL stream, so the call has completed when it
//    returns. A CPU-only NCCL program (which NVIDIA's NCCL cannot run) needs
//    no cudaStreamSynchronize then, and could not call it without the CUDA
//    runtime.
//  - A device buffer: a Chorus stream linked to the call's cudaStream_t
//    (chorusStreamFromCuda), so the call returns at once and is ordered on
//    that stream as NCCL's calls are: after the work queued there before
//    it, before the work queued after it.
// Calls of both kinds on one communicator keep their issue order (Chorus
// orders a communicator's launches by ticket, whatever their stream).
#pragma once

#include <nccl.h>

#include "chorus/chorus.h"

namespace chorus_nccl {

// Sets *out for a call on `stream` with these buffers (null: not used by the
// call). On failure (the linked stream cannot be made: a build of Chorus
// without CUDA cannot see device memory, so this fails only where CUDA is
// present but refuses, e.g. a device without stream memory operations)
// records the thread's last error naming `api`.
ncclResult_t StreamForCall(const char* api, cudaStream_t stream, const void* sendbuff, const void* recvbuff,
                           chorusStream_t* out);

}  // namespace chorus_nccl
