// What a collective call asks for, independent of any algorithm.
#pragma once

#include <cstddef>

#include "base/collective_kind.h"
#include "base/dtype.h"

namespace chorus {

struct Topology;  // algorithms/topology.h

const char* CollectiveName(Collective coll);  // "allreduce", "broadcast", ...

// Buffer sizes follow NCCL: `count` is the per-rank count of the call, i.e.
//   AllReduce/Broadcast/Reduce: send and recv hold count elements;
//   AllGather/Gather: send holds count, recv holds nranks*count;
//   ReduceScatter/Scatter: send holds nranks*count, recv holds count;
//   AllToAll: send and recv hold nranks*count (block j <-> rank j).
// `in_place` means the user passed aliased buffers as NCCL defines in place
// (same pointer, or recv + rank*count for the gather/scatter families); the
// schedule must be correct under that aliasing.
struct CollectiveArgs {
  Collective coll = Collective::kAllReduce;
  size_t count = 0;
  DataType dtype = chorusFloat32;
  ReduceOp op = ReduceOp::kSum;
  int root = 0;
  int nranks = 1;
  int rank = 0;
  bool in_place = false;
  // Pipeline segment of the pipelined builders (chain, tree, dbtree, ps): each
  // of their steps is cut into steps of this many bytes (rounded down to
  // whole elements, at least one) with per-segment dependencies, so that hops
  // overlap even when the executor's chunk is larger. 0 = one step per hop,
  // pipelined by the executor's chunking only.
  size_t segment_bytes = 0;
  // Number of server ranks of the sharded parameter server ("ps_sharded"):
  // ranks 0..k-1 each own 1/k of the vector. 0 (or more than nranks) = nranks.
  int server_count = 0;
  // Which host each rank runs on, for the hierarchical builders ("hier",
  // "hier_sliced"); the others ignore it. nullptr = all ranks on one host.
  // Fixed per communicator and owned by it; must outlive the build.
  const Topology* topology = nullptr;
};

// Bytes of the send and receive buffer for these args. The user's buffers
// that NCCL ignores (recv on non-roots of Reduce/Gather, send on non-roots of
// Broadcast/Scatter) are NOT the user's memory: the executor binds them to
// private memory of this nominal size, so a schedule may use them as extra
// space, but results written there are discarded.
size_t SendBufferBytes(const CollectiveArgs& args);
size_t RecvBufferBytes(const CollectiveArgs& args);

}  // namespace chorus
