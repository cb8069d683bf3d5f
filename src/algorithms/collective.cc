#include "algorithms/collective.h"

namespace chorus {

const char* CollectiveName(Collective coll) {
  switch (coll) {
    case Collective::kAllReduce:
      return "allreduce";
    case Collective::kBroadcast:
      return "broadcast";
    case Collective::kReduce:
      return "reduce";
    case Collective::kAllGather:
      return "allgather";
    case Collective::kReduceScatter:
      return "reducescatter";
    case Collective::kAllToAll:
      return "alltoall";
    case Collective::kGather:
      return "gather";
    case Collective::kScatter:
      return "scatter";
    case Collective::kCount:
      break;
  }
  return "unknown";
}

namespace {

// Elements in the send and receive buffers, in units of `count`.
size_t SendBlocks(const CollectiveArgs& args) {
  switch (args.coll) {
    case Collective::kReduceScatter:
    case Collective::kScatter:
    case Collective::kAllToAll:
      return static_cast<size_t>(args.nranks);
    default:
      return 1;
  }
}

size_t RecvBlocks(const CollectiveArgs& args) {
  switch (args.coll) {
    case Collective::kAllGather:
    case Collective::kGather:
    case Collective::kAllToAll:
      return static_cast<size_t>(args.nranks);
    default:
      return 1;
  }
}

}  // namespace

size_t SendBufferBytes(const CollectiveArgs& args) { return SendBlocks(args) * args.count * DataTypeSize(args.dtype); }

size_t RecvBufferBytes(const CollectiveArgs& args) { return RecvBlocks(args) * args.count * DataTypeSize(args.dtype); }

}  // namespace chorus
