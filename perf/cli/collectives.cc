#include "perf/cli/collectives.h"

#include "perf/cli/data_pattern.h"

namespace chorus::perf {

namespace {

constexpr CollectiveInfo kInfos[] = {
    {"all_reduce", true, false}, {"all_gather", false, false},    {"broadcast", false, true},
    {"reduce", true, true},      {"reduce_scatter", true, false}, {"alltoall", false, false},
    {"gather", false, true},     {"scatter", false, true},        {"sendrecv", false, false},
};

// nccl-tests keeps per-rank blocks 16-byte aligned.
size_t AlignedBlock(size_t count, size_t type_size, int nranks) {
  const size_t per_rank = count / static_cast<size_t>(nranks);
  const size_t align = type_size < 16 ? 16 / type_size : 1;
  return per_rank / align * align;
}

}  // namespace

const CollectiveInfo& InfoOf(CollectiveKind kind) { return kInfos[static_cast<int>(kind)]; }

CollectiveCounts CountsOf(CollectiveKind kind, size_t count, size_t type_size, int nranks) {
  const size_t n = static_cast<size_t>(nranks);
  CollectiveCounts c;
  switch (kind) {
    case CollectiveKind::kAllGather:
    case CollectiveKind::kGather: {
      const size_t base = AlignedBlock(count, type_size, nranks);
      c = {base, base * n, base, base, 0};
      break;
    }
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kScatter: {
      const size_t base = AlignedBlock(count, type_size, nranks);
      c = {base * n, base, base, 0, base};
      break;
    }
    case CollectiveKind::kAlltoAll: {
      const size_t per_peer = count / n;
      c = {per_peer * n, per_peer * n, per_peer, 0, 0};
      break;
    }
    case CollectiveKind::kSendRecv:
      c = {count, count, count, 0, 0, count};
      break;
    default:  // allreduce, broadcast, reduce
      c = {count, count, count, 0, 0};
      break;
  }
  return c;
}

size_t RecvAllocationFactor(CollectiveKind kind) { return kind == CollectiveKind::kSendRecv ? 2 : 1; }

double BusBandwidthFactor(CollectiveKind kind, int nranks) {
  const double n = nranks;
  switch (kind) {
    case CollectiveKind::kAllReduce: return 2.0 * (n - 1) / n;
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAlltoAll:
    case CollectiveKind::kGather:
    case CollectiveKind::kScatter: return (n - 1) / n;
    default: return 1.0;  // broadcast, reduce, sendrecv
  }
}

chorusResult_t IssueCollective(CollectiveKind kind, const void* send, void* recv, size_t param_count,
                               chorusDataType_t type, chorusRedOp_t op, int root, int rank, int nranks,
                               chorusComm_t comm, chorusStream_t stream) {
  switch (kind) {
    case CollectiveKind::kAllReduce: return chorusAllReduce(send, recv, param_count, type, op, comm, stream);
    case CollectiveKind::kAllGather: return chorusAllGather(send, recv, param_count, type, comm, stream);
    case CollectiveKind::kBroadcast: return chorusBroadcast(send, recv, param_count, type, root, comm, stream);
    case CollectiveKind::kReduce: return chorusReduce(send, recv, param_count, type, op, root, comm, stream);
    case CollectiveKind::kReduceScatter:
      return chorusReduceScatter(send, recv, param_count, type, op, comm, stream);
    case CollectiveKind::kAlltoAll: return chorusAlltoAll(send, recv, param_count, type, comm, stream);
    case CollectiveKind::kGather: return chorusGather(send, recv, param_count, type, root, comm, stream);
    case CollectiveKind::kScatter: return chorusScatter(send, recv, param_count, type, root, comm, stream);
    case CollectiveKind::kSendRecv: {
      chorusResult_t result = chorusGroupStart();
      if (result != chorusSuccess) return result;
      const chorusResult_t sent = chorusSend(send, param_count, type, (rank + 1) % nranks, comm, stream);
      const chorusResult_t received = chorusRecv(recv, param_count, type, (rank + nranks - 1) % nranks, comm, stream);
      // End the group even after a failed post, so this thread's group state stays balanced.
      result = chorusGroupEnd();
      if (sent != chorusSuccess) return sent;
      if (received != chorusSuccess) return received;
      return result;
    }
  }
  return chorusInvalidArgument;
}

void FillInputs(const RunData& run, void* send) {
  if (InfoOf(run.kind).has_op) {
    const ReductionPattern pattern{run.type, run.op, run.nranks, run.seed};
    FillReductionInput(pattern, run.rank, send, 0, run.counts.send);
  } else {
    FillSourceData(run.type, run.seed, run.rank, send, 0, run.counts.send);
  }
}

size_t CountWrongResults(const RunData& run, const void* recv) {
  const CollectiveCounts& c = run.counts;
  const auto* bytes = static_cast<const unsigned char*>(recv);
  const size_t type_size = TypeSize(run.type);
  const ReductionPattern pattern{run.type, run.op, run.nranks, run.seed};
  const size_t me = static_cast<size_t>(run.rank);
  size_t wrong = 0;
  switch (run.kind) {
    case CollectiveKind::kAllReduce:
      return CountWrongReduced(pattern, recv, 0, c.recv);
    case CollectiveKind::kReduce:
      return run.rank == run.root ? CountWrongReduced(pattern, recv, 0, c.recv) : 0;
    case CollectiveKind::kReduceScatter:
      return CountWrongReduced(pattern, recv, me * c.param, c.recv);
    case CollectiveKind::kBroadcast:
      return CountWrongSourceData(run.type, run.seed, run.root, recv, 0, c.recv);
    case CollectiveKind::kScatter:
      return CountWrongSourceData(run.type, run.seed, run.root, recv, me * c.param, c.recv);
    case CollectiveKind::kSendRecv:
      return CountWrongSourceData(run.type, run.seed, (run.rank + run.nranks - 1) % run.nranks, recv, 0, c.recv);
    case CollectiveKind::kGather:
      if (run.rank != run.root) return 0;
      [[fallthrough]];
    case CollectiveKind::kAllGather:
      // Block s holds rank s's send buffer.
      for (int source = 0; source < run.nranks; ++source) {
        wrong += CountWrongSourceData(run.type, run.seed, source, bytes + source * c.param * type_size, 0, c.param);
      }
      return wrong;
    case CollectiveKind::kAlltoAll:
      // Block s holds block `me` of rank s's send buffer.
      for (int source = 0; source < run.nranks; ++source) {
        wrong += CountWrongSourceData(run.type, run.seed, source, bytes + source * c.param * type_size,
                                      me * c.param, c.param);
      }
      return wrong;
  }
  return c.recv;
}

}  // namespace chorus::perf
