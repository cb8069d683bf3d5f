// Which memory kinds the C API's calls take, decided once per call where the
// call becomes an Operation, so that no path past it runs CPU code on memory
// the CPU cannot touch. Collectives and send/receive take every kind with an
// engine (the executor stages it, core/executor.h); the paths that run CPU
// code on user buffers outside the engines (compressed allreduce, gossip, a
// PreMulSum scalar read at each call) refuse the kinds the CPU cannot touch.
// The messages name the buffer and its kind; the caller adds the call's name.
#pragma once

#include "base/memory_kind.h"
#include "base/status.h"
#include "core/operation.h"

namespace chorus {

class Communicator;

// "host memory", "CUDA device memory", ...: for messages to users.
const char* DescribeMemoryKind(MemoryKind kind);

// Fills op->send_kind and op->recv_kind from op->send and op->recv (null:
// host). chorusInvalidArgument, and nothing filled that matters, when:
//  - one buffer is memory the CPU can touch and the other is not (a device
//    send with a host receive: NCCL refuses the mix too);
//  - a kind has no engine in this build.
Status ClassifyCallBuffers(const Communicator& comm, Operation* op);

// chorusInvalidArgument naming `buffer`, its kind and `path` when `pointer`
// is memory the CPU cannot touch, for paths whose CPU code reads it.
Status RequireCpuMemory(const Communicator& comm, const char* buffer, const void* pointer, const char* path);

}  // namespace chorus
