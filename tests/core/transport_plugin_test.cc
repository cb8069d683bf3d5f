// A transport that is not part of the library ("loop", tests/core/
// loop_transport/) plugged in through a registry table of the test's own:
// communicators route over it by CHORUS_TRANSPORT's rules (a name, auto by
// preference, an ordered list, a fallback when it cannot be created), and
// unknown names fail naming the known ones.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "chorus/chorus.h"
#include "core/comm_factory.h"
#include "tests/core/loop_transport/loop_transport.h"
#include "transports/tcp/tcp_transport.h"

namespace chorus::testing {
namespace {

struct RankOutcome {
  Status created;
  chorusResult_t reduced = chorusInternalError;
  std::vector<float> result;
};

// Creates `nranks` communicators as threads with `registry` and
// `selection`, allreduces 1000 floats (rank r contributes r + i), destroys.
std::vector<RankOutcome> RunAllReduce(int nranks, const TransportRegistry& registry, const std::string& selection) {
  chorusUniqueId id;
  EXPECT_TRUE(MakeUniqueId(&id).ok());
  UniqueIdContents contents;
  EXPECT_TRUE(DecodeUniqueId(id, &contents).ok());
  std::vector<RankOutcome> outcomes(nranks);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < nranks; ++rank) {
    threads.emplace_back([&, rank] {
      RankOutcome& outcome = outcomes[rank];
      CommOptions options;
      options.transports = &registry;
      outcome.created = ResolveOptions(nullptr, &options);
      if (!outcome.created.ok()) return;
      options.transport_selection = selection;
      options.use_tuner = false;  // no calibration: seconds matter here
      options.timeout_ms = 20000;
      std::unique_ptr<chorusComm> comm;
      outcome.created = CreateCommWithOptions(contents, nranks, rank, options, &comm);
      if (!outcome.created.ok()) return;
      std::vector<float> data(1000);
      for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(rank) + static_cast<float>(i);
      outcome.result.resize(data.size());
      outcome.reduced =
          chorusAllReduce(data.data(), outcome.result.data(), data.size(), chorusFloat32, chorusSum, comm.get(), nullptr);
      EXPECT_EQ(chorusCommDestroy(comm.release()), chorusSuccess);
    });
  }
  for (std::thread& thread : threads) thread.join();
  return outcomes;
}

void ExpectSums(const std::vector<RankOutcome>& outcomes) {
  const int nranks = static_cast<int>(outcomes.size());
  for (int rank = 0; rank < nranks; ++rank) {
    ASSERT_TRUE(outcomes[rank].created.ok()) << "rank " << rank << ": " << outcomes[rank].created.message();
    ASSERT_EQ(outcomes[rank].reduced, chorusSuccess) << "rank " << rank;
    for (size_t i = 0; i < outcomes[rank].result.size(); ++i) {
      const float expected = static_cast<float>(nranks * (nranks - 1) / 2) + static_cast<float>(nranks * i);
      ASSERT_EQ(outcomes[rank].result[i], expected) << "rank " << rank << " element " << i;
    }
  }
}

TEST(TransportPluginTest, ANamedTransportCarriesEverything) {
  LoopFabric fabric(3);
  const TransportRegistry registry({LoopTransportDescriptor(&fabric), TcpTransportDescriptor()});
  ExpectSums(RunAllReduce(3, registry, "loop"));
  EXPECT_EQ(fabric.created.load(), 3);
  EXPECT_GT(fabric.messages_sent.load(), 0);
}

TEST(TransportPluginTest, AutoTakesTheMostPreferred) {
  LoopFabric fabric(3);
  const TransportRegistry registry({TcpTransportDescriptor(), LoopTransportDescriptor(&fabric)});
  ExpectSums(RunAllReduce(3, registry, "auto"));
  EXPECT_GT(fabric.messages_sent.load(), 0);
}

TEST(TransportPluginTest, AListTakesTheFirstThatReaches) {
  LoopFabric fabric(3);
  const TransportRegistry registry({LoopTransportDescriptor(&fabric), TcpTransportDescriptor()});
  ExpectSums(RunAllReduce(3, registry, "tcp,loop"));
  EXPECT_EQ(fabric.created.load(), 3);          // created and connected ...
  EXPECT_EQ(fabric.messages_sent.load(), 0);    // ... but tcp reaches every peer first
}

TEST(TransportPluginTest, ARankThatCannotCreateItFallsBackToTheNext) {
  // As shm on a too small /dev/shm: rank 1 warns and publishes only tcp, so
  // its peers reach it over tcp, and each other over loop.
  LoopFabric fabric(3);
  fabric.fail_rank = 1;
  const TransportRegistry registry({LoopTransportDescriptor(&fabric), TcpTransportDescriptor()});
  ExpectSums(RunAllReduce(3, registry, "loop,tcp"));
  EXPECT_EQ(fabric.created.load(), 2);
  EXPECT_GT(fabric.messages_sent.load(), 0);
}

TEST(TransportPluginTest, ANamedTransportThatCannotReachAPeerFailsEveryRankNamingIt) {
  LoopFabric fabric(3);
  fabric.island_from = 2;  // rank 2 is out of the others' reach
  const TransportRegistry registry({LoopTransportDescriptor(&fabric), TcpTransportDescriptor()});
  const std::vector<RankOutcome> outcomes = RunAllReduce(3, registry, "loop");
  for (int rank = 0; rank < 3; ++rank) {
    const Status& created = outcomes[rank].created;
    EXPECT_EQ(created.code(), chorusInvalidUsage) << "rank " << rank << ": " << created.message();
    EXPECT_NE(created.message().find("CHORUS_TRANSPORT=loop: no transport reaches rank 2 from rank 0"),
              std::string::npos)
        << created.message();
  }
  // The same job with tcp as well: rank 2 over tcp.
  LoopFabric both(3);
  both.island_from = 2;
  const TransportRegistry with_tcp({LoopTransportDescriptor(&both), TcpTransportDescriptor()});
  ExpectSums(RunAllReduce(3, with_tcp, "loop,tcp"));
  EXPECT_GT(both.messages_sent.load(), 0);
}

TEST(TransportPluginTest, TheBuiltInTransportsByEverySelection) {
  // One host: shm alone, tcp alone, and both in either order.
  for (const char* selection : {"auto", "shm", "tcp", "shm,tcp", "tcp,shm"}) {
    SCOPED_TRACE(selection);
    ExpectSums(RunAllReduce(3, BuiltinTransports(), selection));
  }
}

TEST(TransportPluginTest, UnknownNamesFailNamingTheKnownTransports) {
  LoopFabric fabric(1);
  const TransportRegistry registry({LoopTransportDescriptor(&fabric), TcpTransportDescriptor()});
  const std::vector<RankOutcome> outcomes = RunAllReduce(1, registry, "shm");
  EXPECT_EQ(outcomes[0].created.code(), chorusInvalidArgument);
  EXPECT_NE(outcomes[0].created.message().find("unknown transport 'shm'"), std::string::npos)
      << outcomes[0].created.message();
  EXPECT_NE(outcomes[0].created.message().find("known transports: loop, tcp"), std::string::npos)
      << outcomes[0].created.message();
  EXPECT_EQ(fabric.created.load(), 0);
}

}  // namespace
}  // namespace chorus::testing
