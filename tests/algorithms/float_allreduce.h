// Runs a float32 sum allreduce of one input vector per rank on virtual
// ranks and returns every rank's result: the harness of the tests that
// check an algorithm's exact floating-point reduction order.
#pragma once

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "algorithms/algorithm.h"
#include "virtual_executor.h"

namespace chorus::testing {

inline std::vector<std::vector<float>> RunFloatSumAllReduce(Algorithm algo,
                                                            const std::vector<std::vector<float>>& inputs,
                                                            const VirtualRunOptions& run, bool in_place) {
  const int p = static_cast<int>(inputs.size());
  const size_t count = inputs[0].size();
  std::vector<Schedule> schedules(p);
  std::vector<std::vector<float>> send(inputs), recv(p, std::vector<float>(count, -1.0f));
  std::vector<RankMemory> memory(p);
  for (int r = 0; r < p; ++r) {
    CollectiveArgs args;
    args.coll = Collective::kAllReduce;
    args.nranks = p;
    args.rank = r;
    args.count = count;
    args.dtype = chorusFloat32;
    args.in_place = in_place;
    EXPECT_TRUE(BuildSchedule(args, algo, &schedules[r]).ok());
    memory[r].send = reinterpret_cast<uint8_t*>(send[r].data());
    memory[r].recv = reinterpret_cast<uint8_t*>(in_place ? send[r].data() : recv[r].data());
    memory[r].send_bytes = memory[r].recv_bytes = count * sizeof(float);
  }
  const std::string error = RunVirtualRanks(schedules, memory, run);
  EXPECT_TRUE(error.empty()) << error;
  return in_place ? send : recv;
}

// Runs the allreduce of `inputs` under every chunk size of `chunks`, eager
// and rendezvous sends, in and out of place, and expects every rank to hold
// exactly (bit for bit) `expected` each time.
inline void ExpectBitIdenticalOnEveryRank(Algorithm algo, const std::vector<std::vector<float>>& inputs,
                                          const std::vector<float>& expected, std::initializer_list<size_t> chunks,
                                          uint64_t seed) {
  const int p = static_cast<int>(inputs.size());
  for (size_t chunk : chunks) {
    for (bool rendezvous : {false, true}) {
      for (bool in_place : {false, true}) {
        VirtualRunOptions run;
        run.chunk_bytes = chunk;
        run.rendezvous = rendezvous;
        run.seed = ++seed;
        const auto results = RunFloatSumAllReduce(algo, inputs, run, in_place);
        for (int r = 0; r < p; ++r) {
          ASSERT_EQ(std::memcmp(results[r].data(), expected.data(), expected.size() * sizeof(float)), 0)
              << AlgorithmName(algo) << " p=" << p << " rank " << r << " chunk " << chunk
              << (in_place ? " in place" : "");
        }
      }
    }
  }
}

}  // namespace chorus::testing
