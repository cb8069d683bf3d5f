#include "algorithms/algorithm.h"

#include <bit>
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

// Every algorithm's builders, indexed by the enum, from base/algorithms.def:
// a row per collective its entry lists, empty rows after them.
struct BuilderRow {
  Collective coll;
  Builder build;
};
struct AlgorithmBuilders {
  Algorithm id;
  BuilderRow rows[kCollectiveCount];
};
constexpr AlgorithmBuilders kBuilders[] = {
    {Algorithm::kAuto, {}},
#define CHORUS_BUILDER(coll, builder) BuilderRow{Collective::k##coll, builder},
#define CHORUS_ALGORITHM(folder, id, name, description, single_host_only, ...) {Algorithm::k##id, {__VA_ARGS__}},
#include "base/algorithms.def"
#undef CHORUS_ALGORITHM
#undef CHORUS_BUILDER
};
static_assert(RowsInEnumOrder(kBuilders), "one builder set per Algorithm value, in enum order");

// How many builders each entry lists. The descriptor's collective set is
// the same list as bits, so fewer bits than builders means a collective
// listed twice.
constexpr int kBuilderCounts[] = {
    0,
#define CHORUS_BUILDER(coll, builder) +1
#define CHORUS_ALGORITHM(folder, id, name, description, single_host_only, ...) (0 __VA_ARGS__),
#include "base/algorithms.def"
#undef CHORUS_ALGORITHM
#undef CHORUS_BUILDER
};

constexpr bool NoCollectiveListedTwice() {
  for (size_t i = 0; i < kAlgorithmCount; ++i) {
    if (std::popcount(kAlgorithmDescriptors[i].collectives) != kBuilderCounts[i]) return false;
  }
  return true;
}
static_assert(NoCollectiveListedTwice(), "an entry of base/algorithms.def lists a collective twice");

// The builder of (algo, coll), or nullptr.
Builder FindBuilder(Algorithm algo, Collective coll) {
  const size_t index = static_cast<size_t>(algo);
  if (index >= kAlgorithmCount) return nullptr;
  for (int i = 0; i < kBuilderCounts[index]; ++i) {
    if (kBuilders[index].rows[i].coll == coll) return kBuilders[index].rows[i].build;
  }
  return nullptr;
}

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
