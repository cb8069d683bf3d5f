// One collective call on N virtual ranks, end to end: build every rank's
// schedule, bind buffers the way a user would (in place with NCCL's layout,
// unused root-only buffers left unbound), check the schedules statically,
// run them on the virtual executor and compare with a straightforward
// reference computed rank by rank.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "algorithms/algorithm.h"
#include "virtual_executor.h"

namespace chorus::testing {

struct CollectiveCase {
  Collective coll = Collective::kAllReduce;
  Algorithm algo = Algorithm::kRing;
  int nranks = 1;
  size_t count = 0;
  int root = 0;
  bool in_place = false;
  DataType dtype = chorusInt32;
  ReduceOp op = ReduceOp::kSum;
  size_t segment_bytes = 0;  // CollectiveArgs::segment_bytes
  int server_count = 0;      // CollectiveArgs::server_count
  std::vector<int> host_of_rank;  // Topology::host_of_rank; empty = no topology
  std::vector<int> group_of_rank;  // Topology::group_of_rank (with host_of_rank)
  VirtualRunOptions run;
};

// The arguments of one rank's call (what most schedule tests build).
inline CollectiveArgs RankArgs(Collective coll, int nranks, int rank, size_t count, DataType dtype = chorusFloat32) {
  CollectiveArgs args;
  args.coll = coll;
  args.nranks = nranks;
  args.rank = rank;
  args.count = count;
  args.dtype = dtype;
  return args;
}

// Every rank's schedule of `algo` for `args` (args.rank is set per rank); a
// rank that does not build is a test failure and leaves its schedule empty.
inline std::vector<Schedule> BuildEveryRank(CollectiveArgs args, Algorithm algo) {
  std::vector<Schedule> schedules(args.nranks);
  for (int r = 0; r < args.nranks; ++r) {
    args.rank = r;
    const Status status = BuildSchedule(args, algo, &schedules[r]);
    EXPECT_TRUE(status.ok()) << "rank " << r << ": " << status.message();
  }
  return schedules;
}

std::string DescribeCase(const CollectiveCase& c);

// Returns an empty string on success, else the failure with context.
std::string RunCollectiveCase(const CollectiveCase& c);

}  // namespace chorus::testing
