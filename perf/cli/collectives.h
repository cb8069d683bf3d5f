// What each CLI measures: nccl-tests' element counts and in-place layouts
// per collective, its bus-bandwidth factor, how to issue it, and how to
// fill its inputs and check its outputs.
#pragma once

#include <cstddef>

#include "chorus/chorus.h"
#include "perf/cli/names.h"

namespace chorus::perf {

enum class CollectiveKind {
  kAllReduce, kAllGather, kBroadcast, kReduce, kReduceScatter, kAlltoAll, kGather, kScatter, kSendRecv
};

struct CollectiveInfo {
  const char* name;  // as in the binary's name, "all_reduce"
  bool has_op;       // a reduction: loops over -o ops
  bool has_root;     // rooted: loops over -r roots
};
const CollectiveInfo& InfoOf(CollectiveKind kind);

// nccl-tests' getCollByteCount, in elements: `count` is the size's
// element count; the in-place call uses sendbuff = recvbuff +
// send_inplace_offset*rank and recvbuff = recvbuff + recv_inplace_offset*rank.
struct CollectiveCounts {
  size_t send = 0;
  size_t recv = 0;
  size_t param = 0;  // the count argument of the call
  size_t send_inplace_offset = 0;
  size_t recv_inplace_offset = 0;
  // Added to the in-place sendbuff whatever the rank. Only sendrecv uses
  // it: a send and a receive on one buffer race, so its "in-place" run
  // sends from just past the receive range of the same allocation.
  size_t send_inplace_shift = 0;
};
// The receive allocation must hold this many times max_bytes.
size_t RecvAllocationFactor(CollectiveKind kind);
CollectiveCounts CountsOf(CollectiveKind kind, size_t count, size_t type_size, int nranks);

// busbw = algbw * factor (nccl-tests' PERFORMANCE.md).
double BusBandwidthFactor(CollectiveKind kind, int nranks);

// One call of the collective (sendrecv: a group of one send to rank+1 and
// one receive from rank-1).
chorusResult_t IssueCollective(CollectiveKind kind, const void* send, void* recv, size_t param_count,
                               chorusDataType_t type, chorusRedOp_t op, int root, int rank, int nranks,
                               chorusComm_t comm, chorusStream_t stream);

// What one run's data depends on.
struct RunData {
  CollectiveKind kind;
  CollectiveCounts counts;
  chorusDataType_t type;
  PerfOp op;
  int root;
  int rank;
  int nranks;
  int seed;
};
// Writes this rank's input at `send` (counts.send elements).
void FillInputs(const RunData& run, void* send);
// Wrong elements among this rank's results at `recv` (counts.recv elements,
// or none on non-roots of reduce and gather).
size_t CountWrongResults(const RunData& run, const void* recv);

}  // namespace chorus::perf
