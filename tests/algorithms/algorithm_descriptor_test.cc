// The algorithm descriptors (base/algorithm_descriptor.h): one per enum
// value, unique names that parse back, and builders, CHORUS_ALGO's error and
// help that agree with them.
#include <gtest/gtest.h>

#include <cctype>
#include <set>
#include <string>

#include "algorithms/algorithm.h"
#include "base/config.h"

namespace chorus {
namespace {

TEST(AlgorithmDescriptor, EveryEnumValueHasExactlyOne) {
  for (size_t value = 0; value < kAlgorithmCount; ++value) {
    const auto algo = static_cast<Algorithm>(value);
    int found = 0;
    for (const AlgorithmDescriptor& descriptor : kAlgorithmDescriptors) found += descriptor.id == algo;
    EXPECT_EQ(found, 1) << "Algorithm value " << value;
    ASSERT_NE(FindAlgorithmDescriptor(algo), nullptr);
    EXPECT_EQ(FindAlgorithmDescriptor(algo)->id, algo);
  }
  EXPECT_EQ(FindAlgorithmDescriptor(Algorithm::kCount), nullptr);
  EXPECT_STREQ(AlgorithmName(Algorithm::kCount), "unknown");
  EXPECT_STREQ(AlgorithmName(static_cast<Algorithm>(200)), "unknown");
}

TEST(AlgorithmDescriptor, NamesAreUniqueAndParseBack) {
  std::set<std::string> names;
  for (const AlgorithmDescriptor& descriptor : kAlgorithmDescriptors) {
    const std::string name = descriptor.name;
    EXPECT_TRUE(names.insert(NormalizeName(name)).second) << name << " is not unique";
    EXPECT_FALSE(std::string(descriptor.description).empty()) << name;
    Algorithm parsed = Algorithm::kCount;
    ASSERT_TRUE(ParseAlgorithmName(AlgorithmName(descriptor.id), &parsed)) << name;
    EXPECT_EQ(parsed, descriptor.id) << name;
    // The CHORUS_ALGO spelling rule: case, '_' and '-' do not count.
    std::string shouted;
    for (char c : name) shouted += c == '_' ? '-' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    parsed = Algorithm::kCount;
    ASSERT_TRUE(ParseAlgorithmName(" " + shouted + " ", &parsed)) << shouted;
    EXPECT_EQ(parsed, descriptor.id) << shouted;
  }
  Algorithm untouched = Algorithm::kRing;
  EXPECT_FALSE(ParseAlgorithmName("unknown", &untouched));
  EXPECT_FALSE(ParseAlgorithmName("hier sliced", &untouched));
  EXPECT_EQ(untouched, Algorithm::kRing);
}

TEST(AlgorithmDescriptor, AutoServesNothingAndEveryOtherServesSomething) {
  EXPECT_EQ(kAlgorithmDescriptors[0].id, Algorithm::kAuto);
  EXPECT_EQ(kAlgorithmDescriptors[0].collectives, 0);
  for (const AlgorithmDescriptor& descriptor : kAlgorithmDescriptors) {
    if (descriptor.id != Algorithm::kAuto) {
      EXPECT_NE(descriptor.collectives, 0) << descriptor.name;
    }
  }
  EXPECT_EQ(FindAlgorithmDescriptor(Algorithm::kRing)->collectives, kEveryCollective);
}

// Every collective a descriptor lists builds a schedule labelled with the
// descriptor's name; every other one is refused.
TEST(AlgorithmDescriptor, BuildersMatchTheCollectivesListed) {
  for (const AlgorithmDescriptor& descriptor : kAlgorithmDescriptors) {
    if (descriptor.id == Algorithm::kAuto) continue;
    for (size_t c = 0; c < kCollectiveCount; ++c) {
      CollectiveArgs args;
      args.coll = static_cast<Collective>(c);
      args.count = 64;
      args.nranks = 4;
      args.rank = 1;
      Schedule schedule;
      const Status status = BuildSchedule(args, descriptor.id, &schedule);
      if (Supports(descriptor.id, args.coll)) {
        ASSERT_TRUE(status.ok()) << descriptor.name << " " << CollectiveName(args.coll) << ": " << status.message();
        EXPECT_EQ(schedule.algorithm, descriptor.name) << CollectiveName(args.coll);
      } else {
        EXPECT_EQ(status.code(), chorusInvalidArgument) << descriptor.name << " " << CollectiveName(args.coll);
      }
    }
  }
}

TEST(AlgorithmDescriptor, ChorusAlgoErrorNamesEveryAlgorithm) {
  AlgorithmTable table;
  const Status status = ParseAlgorithmSpec("allreduce:bogus", &table);
  ASSERT_EQ(status.code(), chorusInvalidArgument);
  EXPECT_EQ(status.message(),
            "CHORUS_ALGO: unknown algorithm 'bogus' in 'allreduce:bogus' (expected auto, ring, tree, ps, ps_sharded, "
            "hd, dbtree, chain, hier, hier_sliced, direct or oneshot)");
}

TEST(AlgorithmDescriptor, ChorusAlgoHelpNamesEveryAlgorithm) {
  std::string help;
  for (const EnvVarSpec& spec : AllEnvVars()) {
    if (std::string(spec.name) == "CHORUS_ALGO") help = spec.help;
  }
  EXPECT_EQ(help,
            "Force algorithms: ring, tree, ps, ps_sharded, hd, dbtree, chain, hier, hier_sliced, direct, oneshot, "
            "or per collective 'allreduce:hd;broadcast:chain'.");
}

}  // namespace
}  // namespace chorus
