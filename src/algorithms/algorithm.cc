#include "algorithms/algorithm.h"

#include <cctype>
#include <cstdint>
#include <limits>

#include "algorithms/builders.h"
#include "algorithms/schedule_builder.h"
#include "algorithms/topology.h"

namespace chorus {

namespace {

std::string Trim(const std::string& text) {
  size_t begin = 0;
  size_t end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  return text.substr(begin, end - begin);
}

bool ParseCollectiveName(const std::string& name, Collective* coll) {
  for (size_t i = 0; i < kCollectiveCount; ++i) {
    if (name == CollectiveName(static_cast<Collective>(i))) {
      *coll = static_cast<Collective>(i);
      return true;
    }
  }
  return false;
}

bool IsRooted(Collective coll) {
  return coll == Collective::kBroadcast || coll == Collective::kReduce || coll == Collective::kGather ||
         coll == Collective::kScatter;
}

Status ValidateArgs(const CollectiveArgs& args) {
  if (static_cast<size_t>(args.coll) >= kCollectiveCount) {
    return InvalidArgument("unknown collective ", static_cast<int>(args.coll));
  }
  if (args.nranks < 1) return InvalidArgument("nranks must be at least 1, got ", args.nranks);
  if (args.rank < 0 || args.rank >= args.nranks) {
    return InvalidArgument("rank ", args.rank, " out of range [0, ", args.nranks, ")");
  }
  if (IsRooted(args.coll) && (args.root < 0 || args.root >= args.nranks)) {
    return InvalidArgument("root ", args.root, " out of range [0, ", args.nranks, ")");
  }
  if (!IsValidDataType(args.dtype) || DataTypeSize(args.dtype) == 0) {
    return InvalidArgument("unknown data type ", static_cast<int>(args.dtype));
  }
  const int op = static_cast<int>(args.op);
  if (op < static_cast<int>(ReduceOp::kSum) || op > static_cast<int>(ReduceOp::kMin)) {
    return InvalidArgument("unknown reduction op ", op);
  }
  if (!IsValidTopology(args.topology, args.nranks)) {
    return InvalidArgument("topology describes ", args.topology->host_of_rank.size(), " ranks, the communicator has ",
                           args.nranks);
  }
  const size_t limit = std::numeric_limits<size_t>::max() / DataTypeSize(args.dtype) / static_cast<size_t>(args.nranks);
  if (args.count > limit) {
    return InvalidArgument("count ", args.count, " of ", DataTypeName(args.dtype), " times ", args.nranks,
                           " ranks overflows the address space");
  }
  return Status::Ok();
}

using Builder = Status (*)(const CollectiveArgs&, Schedule*);

// Every builder, by (algorithm, collective). The descriptors' collective
// sets are the contract (Supports); the check below keeps this table and
// them in step at compile time.
struct BuilderEntry {
  Algorithm algo;
  Collective coll;
  Builder build;
};
constexpr BuilderEntry kBuilders[] = {
    {Algorithm::kRing, Collective::kAllReduce, BuildRingAllReduce},
    {Algorithm::kRing, Collective::kBroadcast, BuildRingBroadcast},
    {Algorithm::kRing, Collective::kReduce, BuildRingReduce},
    {Algorithm::kRing, Collective::kAllGather, BuildRingAllGather},
    {Algorithm::kRing, Collective::kReduceScatter, BuildRingReduceScatter},
    {Algorithm::kRing, Collective::kAllToAll, BuildRingAllToAll},
    {Algorithm::kRing, Collective::kGather, BuildRingGather},
    {Algorithm::kRing, Collective::kScatter, BuildRingScatter},
    {Algorithm::kTree, Collective::kAllReduce, BuildTreeAllReduce},
    {Algorithm::kTree, Collective::kBroadcast, BuildTreeBroadcast},
    {Algorithm::kTree, Collective::kReduce, BuildTreeReduce},
    {Algorithm::kParameterServer, Collective::kAllReduce, BuildParameterServerAllReduce},
    {Algorithm::kParameterServer, Collective::kBroadcast, BuildParameterServerBroadcast},
    {Algorithm::kParameterServer, Collective::kReduce, BuildParameterServerReduce},
    {Algorithm::kShardedParameterServer, Collective::kAllReduce, BuildShardedParameterServerAllReduce},
    {Algorithm::kHalvingDoubling, Collective::kAllReduce, BuildHalvingDoublingAllReduce},
    {Algorithm::kDoubleBinaryTree, Collective::kAllReduce, BuildDoubleTreeAllReduce},
    {Algorithm::kDoubleBinaryTree, Collective::kBroadcast, BuildDoubleTreeBroadcast},
    {Algorithm::kDoubleBinaryTree, Collective::kReduce, BuildDoubleTreeReduce},
    {Algorithm::kChain, Collective::kBroadcast, BuildChainBroadcast},
    {Algorithm::kChain, Collective::kReduce, BuildChainReduce},
    {Algorithm::kHierarchical, Collective::kAllReduce, BuildHierarchicalAllReduce},
    {Algorithm::kHierarchicalSliced, Collective::kAllReduce, BuildHierarchicalSlicedAllReduce},
    {Algorithm::kDirect, Collective::kAllReduce, BuildDirectAllReduce},
    {Algorithm::kDirect, Collective::kReduceScatter, BuildDirectReduceScatter},
    {Algorithm::kDirect, Collective::kAllGather, BuildDirectAllGather},
    {Algorithm::kOneShot, Collective::kAllReduce, BuildOneShotAllReduce},
};

// The builder of (algo, coll), or nullptr.
constexpr Builder FindBuilder(Algorithm algo, Collective coll) {
  for (const BuilderEntry& entry : kBuilders) {
    if (entry.algo == algo && entry.coll == coll) return entry.build;
  }
  return nullptr;
}

// How many rows of kBuilders serve (algo, coll). It reads only the keys:
// whether a function's address is null is not a constant expression where
// symbols may be interposed (the sanitizer builds).
constexpr int BuilderRows(Algorithm algo, Collective coll) {
  int rows = 0;
  for (const BuilderEntry& entry : kBuilders) rows += entry.algo == algo && entry.coll == coll;
  return rows;
}

// Exactly one builder for each collective a descriptor lists, none for the
// others.
constexpr bool BuildersMatchDescriptors() {
  for (const BuilderEntry& entry : kBuilders) {
    if (BuilderRows(entry.algo, entry.coll) != 1) return false;
  }
  for (const AlgorithmDescriptor& descriptor : kAlgorithmDescriptors) {
    for (size_t c = 0; c < kCollectiveCount; ++c) {
      const auto coll = static_cast<Collective>(c);
      const bool listed = (descriptor.collectives & CollectiveBit(coll)) != 0;
      if (listed != (BuilderRows(descriptor.id, coll) == 1)) return false;
    }
  }
  return true;
}
static_assert(BuildersMatchDescriptors(),
              "kBuilders must hold one builder for each collective of each descriptor "
              "(base/algorithm_descriptor.h), and no other");

}  // namespace

Status ParseAlgorithmSpec(const std::string& spec, AlgorithmTable* table) {
  AlgorithmTable parsed;
  size_t begin = 0;
  while (begin <= spec.size()) {
    size_t end = spec.find(';', begin);
    if (end == std::string::npos) end = spec.size();
    const std::string entry = Trim(spec.substr(begin, end - begin));
    begin = end + 1;
    if (entry.empty()) continue;

    const size_t colon = entry.find(':');
    const std::string algo_token = colon == std::string::npos ? entry : entry.substr(colon + 1);
    Algorithm algo;
    if (!ParseAlgorithmName(algo_token, &algo)) {
      return InvalidArgument("CHORUS_ALGO: unknown algorithm '", Trim(algo_token), "' in '", spec, "' (expected ",
                             AlgorithmNameList(/*with_auto=*/true, " or "), ")");
    }
    if (colon == std::string::npos) {
      // A bare name applies to every collective that has such a builder.
      for (size_t i = 0; i < kCollectiveCount; ++i) {
        if (algo == Algorithm::kAuto || Supports(algo, static_cast<Collective>(i))) {
          parsed.forced[i] = algo;
        }
      }
      continue;
    }
    const std::string coll_token = entry.substr(0, colon);
    Collective coll;
    if (!ParseCollectiveName(NormalizeName(coll_token), &coll)) {
      return InvalidArgument("CHORUS_ALGO: unknown collective '", Trim(coll_token), "' in '", spec,
                             "' (expected allreduce, broadcast, reduce, allgather, "
                             "reducescatter, alltoall, gather or scatter)");
    }
    parsed.forced[static_cast<size_t>(coll)] = algo;
  }
  *table = parsed;
  return Status::Ok();
}

Algorithm ChooseAlgorithm(const CollectiveArgs& args, const AlgorithmTable& table) {
  const size_t index = static_cast<size_t>(args.coll);
  if (index < kCollectiveCount) {
    const Algorithm forced = table.forced[index];
    if (forced != Algorithm::kAuto) {
      return Supports(forced, args.coll) ? forced : Algorithm::kRing;
    }
  }
  if (!Supports(Algorithm::kTree, args.coll)) return Algorithm::kRing;
  const size_t bytes = args.count * DataTypeSize(args.dtype);
  if (bytes <= kTreeAlwaysBytes) return Algorithm::kTree;
  if (args.nranks >= kTreeManyRanks && bytes <= kTreeManyRanksBytes) return Algorithm::kTree;
  return Algorithm::kRing;
}

Status BuildSchedule(const CollectiveArgs& args, Algorithm algo, Schedule* out) {
  if (algo == Algorithm::kAuto) {
    return InvalidArgument("BuildSchedule needs a concrete algorithm: call ChooseAlgorithm");
  }
  if (!Supports(algo, args.coll)) {
    return InvalidArgument("algorithm ", AlgorithmName(algo), " has no builder for ", CollectiveName(args.coll));
  }
  CHORUS_RETURN_IF_ERROR(ValidateArgs(args));

  if (args.count == 0 || args.nranks == 1) {
    // Nothing to move, or only our own data: a local copy (none in place).
    ScheduleBuilder builder(args, algo, out);
    builder.Copy(BufferRange{BufferId::kSend, 0}, BufferRange{BufferId::kRecv, 0},
                 args.count * DataTypeSize(args.dtype));
    return builder.Finish();
  }
  const Builder builder = FindBuilder(algo, args.coll);
  if (builder != nullptr) return builder(args, out);
  return InternalError("no builder for ", CollectiveName(args.coll), " with ", AlgorithmName(algo));
}

}  // namespace chorus
