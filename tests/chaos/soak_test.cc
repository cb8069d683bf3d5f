// Soak: long randomized sequences of collectives, each checked exactly.
// Every call draws its collective (all eight), datatype (all ten), op (all
// five), root, count (0, then log-uniform up to 10^6 elements per rank) and
// in-place layout; communicators of 2-5 thread ranks, each with one forced
// algorithm (or auto), run two at a time on their own threads, so that
// several communicators are busy at once. Every rank draws the same
// sequence from the same seed. Any wrong element, error or write outside
// the result fails the test.
// CHORUS_SOAK_CALLS (default 2000 per process run) and CHORUS_SOAK_SEED
// (default 1) choose the runs; perf/chaos/soak.sh runs 10^4 and more.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/api/harness.h"
#include "tests/api/reference.h"
#include "tests/api/typed_buffer.h"

namespace chorus_test {
namespace {

constexpr int kTimeoutMs = 60000;
constexpr uint8_t kSentinel = 0xEE;

enum class Collective { kAllReduce, kReduce, kReduceScatter, kBroadcast, kAllGather, kAlltoAll, kGather, kScatter };
const char* const kCollectiveNames[] = {"AllReduce", "Reduce",   "ReduceScatter", "Broadcast",
                                        "AllGather", "AlltoAll", "Gather",        "Scatter"};

// One forced algorithm per communicator ("auto": the tuner's choice).
const char* const kAlgorithms[] = {"auto",  "ring",       "tree",         "ps",
                                   "allreduce:ps_sharded", "allreduce:hd", "dbtree", "broadcast:chain",
                                   "allreduce:hier", "allreduce:hier_sliced", "direct", "allreduce:oneshot"};

struct Call {
  Collective collective;
  chorusDataType_t dtype;
  chorusRedOp_t op;
  int root;
  size_t count;  // per rank (per block for the gathers and scatters)
  bool in_place;

  std::string Describe(const char* algo, int nranks) const {
    char text[200];
    std::snprintf(text, sizeof(text), "%s %s %s root %d count %zu %s (%d ranks, algo %s)",
                  kCollectiveNames[static_cast<int>(collective)], Name(dtype), Name(op), root, count,
                  in_place ? "in place" : "out of place", nranks, algo);
    return text;
  }
};

Call Draw(std::mt19937_64& random, int nranks) {
  auto pick = [&](size_t n) { return static_cast<size_t>(random() % n); };
  Call call;
  call.collective = static_cast<Collective>(pick(8));
  call.dtype = kAllDataTypes[pick(std::size(kAllDataTypes))];
  call.op = kAllOps[pick(std::size(kAllOps))];
  call.root = static_cast<int>(pick(static_cast<size_t>(nranks)));
  // A block-per-rank collective holds nranks blocks: keep it under 10^6 too.
  const bool blocks = call.collective == Collective::kReduceScatter || call.collective == Collective::kAllGather ||
                      call.collective == Collective::kAlltoAll || call.collective == Collective::kGather ||
                      call.collective == Collective::kScatter;
  const double most = blocks ? 1e6 / nranks : 1e6;
  call.count = pick(20) == 0 ? 0 : static_cast<size_t>(std::exp(std::uniform_real_distribution<double>(
                                       0, std::log(most))(random)));
  call.in_place = call.collective != Collective::kAlltoAll && pick(2) == 0;
  return call;
}

void FillInputs(TypedBuffer& buffer, size_t offset, size_t count, chorusRedOp_t op, int rank, int nranks,
                size_t first_index) {
  for (size_t i = 0; i < count; ++i) buffer.Set(offset + i, InputValue(buffer.dtype(), op, rank, nranks, first_index + i));
}
void FillPlain(TypedBuffer& buffer, size_t offset, size_t count, int rank, size_t block) {
  for (size_t i = 0; i < count; ++i) buffer.Set(offset + i, PlainValue(rank, block * 7 + i));
}
std::vector<double> Reduced(chorusDataType_t dtype, chorusRedOp_t op, int nranks, size_t first, size_t count) {
  std::vector<double> expected(count);
  for (size_t i = 0; i < count; ++i) expected[i] = ReducedValue(dtype, op, nranks, first + i);
  return expected;
}
std::vector<double> Plain(int rank, size_t count, size_t block) {
  std::vector<double> values(count);
  for (size_t i = 0; i < count; ++i) values[i] = PlainValue(rank, block * 7 + i);
  return values;
}

// Runs `call` on this rank and checks its result; "" when exact.
std::string RunAndCheck(const Call& call, chorusComm_t comm, int rank, int n) {
  const size_t count = call.count;
  const chorusDataType_t dtype = call.dtype;
  chorusResult_t result = chorusSuccess;
  std::string wrong;
  auto expect = [&](const TypedBuffer& buffer, size_t offset, const std::vector<double>& values) {
    if (wrong.empty()) wrong = CompareRange(buffer, offset, values);
  };
  switch (call.collective) {
    case Collective::kAllReduce: {
      TypedBuffer send(dtype, count), recv(dtype, count);
      FillInputs(send, 0, count, call.op, rank, n, 0);
      recv.FillBytes(kSentinel);
      TypedBuffer& out = call.in_place ? send : recv;
      result = chorusAllReduce(send.data(), out.data(), count, dtype, call.op, comm, nullptr);
      if (result == chorusSuccess) expect(out, 0, Reduced(dtype, call.op, n, 0, count));
      break;
    }
    case Collective::kReduce: {
      TypedBuffer send(dtype, count), recv(dtype, count);
      FillInputs(send, 0, count, call.op, rank, n, 0);
      recv.FillBytes(kSentinel);
      TypedBuffer& out = call.in_place && rank == call.root ? send : recv;
      result = chorusReduce(send.data(), out.data(), count, dtype, call.op, call.root, comm, nullptr);
      if (result == chorusSuccess && rank == call.root) expect(out, 0, Reduced(dtype, call.op, n, 0, count));
      if (result == chorusSuccess && rank != call.root && !recv.AllBytesAre(kSentinel)) wrong = "non-root recvbuff written";
      break;
    }
    case Collective::kReduceScatter: {
      TypedBuffer send(dtype, count * n), recv(dtype, count);
      FillInputs(send, 0, count * n, call.op, rank, n, 0);
      recv.FillBytes(kSentinel);
      void* out = call.in_place ? send.at(rank * count) : recv.data();
      result = chorusReduceScatter(send.data(), out, count, dtype, call.op, comm, nullptr);
      if (result == chorusSuccess) {
        expect(call.in_place ? send : recv, call.in_place ? rank * count : 0,
               Reduced(dtype, call.op, n, rank * count, count));
      }
      break;
    }
    case Collective::kBroadcast: {
      TypedBuffer send(dtype, count), recv(dtype, count);
      send.FillBytes(kSentinel);
      recv.FillBytes(kSentinel);
      if (rank == call.root) FillPlain(send, 0, count, call.root, 0);
      TypedBuffer& out = call.in_place ? send : recv;
      result = chorusBroadcast(send.data(), out.data(), count, dtype, call.root, comm, nullptr);
      if (result == chorusSuccess) expect(out, 0, Plain(call.root, count, 0));
      break;
    }
    case Collective::kAllGather: {
      TypedBuffer send(dtype, count), recv(dtype, count * n);
      recv.FillBytes(kSentinel);
      TypedBuffer& source = call.in_place ? recv : send;
      FillPlain(source, call.in_place ? rank * count : 0, count, rank, 0);
      const void* in = call.in_place ? recv.at(rank * count) : send.data();
      result = chorusAllGather(in, recv.data(), count, dtype, comm, nullptr);
      for (int r = 0; r < n && result == chorusSuccess; ++r) expect(recv, r * count, Plain(r, count, 0));
      break;
    }
    case Collective::kAlltoAll: {
      TypedBuffer send(dtype, count * n), recv(dtype, count * n);
      for (int to = 0; to < n; ++to) FillPlain(send, to * count, count, rank, static_cast<size_t>(to));
      recv.FillBytes(kSentinel);
      result = chorusAlltoAll(send.data(), recv.data(), count, dtype, comm, nullptr);
      for (int from = 0; from < n && result == chorusSuccess; ++from) {
        expect(recv, from * count, Plain(from, count, static_cast<size_t>(rank)));
      }
      break;
    }
    case Collective::kGather: {
      TypedBuffer send(dtype, count), recv(dtype, count * n);
      recv.FillBytes(kSentinel);
      const bool in_place = call.in_place && rank == call.root;
      FillPlain(in_place ? recv : send, in_place ? rank * count : 0, count, rank, 0);
      const void* in = in_place ? recv.at(rank * count) : send.data();
      result = chorusGather(in, recv.data(), count, dtype, call.root, comm, nullptr);
      if (result == chorusSuccess && rank == call.root) {
        for (int r = 0; r < n; ++r) expect(recv, r * count, Plain(r, count, 0));
      }
      if (result == chorusSuccess && rank != call.root && !recv.AllBytesAre(kSentinel)) wrong = "non-root recvbuff written";
      break;
    }
    case Collective::kScatter: {
      TypedBuffer send(dtype, count * n), recv(dtype, count);
      send.FillBytes(kSentinel);
      recv.FillBytes(kSentinel);
      if (rank == call.root) {
        for (int to = 0; to < n; ++to) FillPlain(send, to * count, count, call.root, static_cast<size_t>(to));
      }
      const bool in_place = call.in_place && rank == call.root;
      void* out = in_place ? send.at(rank * count) : recv.data();
      result = chorusScatter(send.data(), out, count, dtype, call.root, comm, nullptr);
      if (result == chorusSuccess) {
        expect(in_place ? send : recv, in_place ? rank * count : 0, Plain(call.root, count, static_cast<size_t>(rank)));
      }
      break;
    }
  }
  if (result != chorusSuccess) return Describe(result, comm);
  return wrong;
}

int EnvInt(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::atoi(value) : fallback;
}

TEST(SoakTest, RandomizedCollectivesOnSeveralCommunicatorsAreExact) {
  const int calls = EnvInt("CHORUS_SOAK_CALLS", 2000);
  const uint64_t seed = static_cast<uint64_t>(EnvInt("CHORUS_SOAK_SEED", 1));
  constexpr int kCallsPerTurn = 50;  // on one communicator, before the next is made
  std::mt19937_64 plan(seed);
  std::atomic<int> done{0}, wrong{0};
  std::atomic<long long> elements{0};
  const auto start = std::chrono::steady_clock::now();
  // Two communicators at a time, each on its own driver thread.
  for (int turn = 0; done.load() < calls; ++turn) {
    std::vector<std::thread> drivers;
    for (int lane = 0; lane < 2; ++lane) {
      const int nranks = 2 + static_cast<int>(plan() % 4);
      const char* algo = kAlgorithms[plan() % std::size(kAlgorithms)];
      const uint64_t calls_seed = plan();
      drivers.emplace_back([&, nranks, algo, calls_seed] {
        chorusConfig_t config = MakeConfig(algo, kTimeoutMs);
        ThreadComms comms = ThreadComms::InitRank(nranks, &config);
        if (!comms.ok()) {
          ADD_FAILURE() << "init of " << nranks << " ranks with " << algo << ": " << comms.error();
          wrong += 1;
          return;
        }
        comms.Run([&](int rank, chorusComm_t comm) {
          std::mt19937_64 random(calls_seed);  // the same sequence on every rank
          for (int i = 0; i < kCallsPerTurn; ++i) {
            const Call call = Draw(random, nranks);
            const std::string why = RunAndCheck(call, comm, rank, nranks);
            if (!why.empty()) {
              ADD_FAILURE() << "rank " << rank << ": " << call.Describe(algo, nranks) << ": " << why;
              ++wrong;
              return;  // the peers then fail at their deadline instead of hanging
            }
            if (rank == 0) {
              ++done;
              elements += static_cast<long long>(call.count);
            }
          }
        });
      });
    }
    for (std::thread& driver : drivers) driver.join();
    if (wrong.load() > 0) break;
  }
  std::printf("soak: %d collectives (seed %llu, %lld elements per rank in all) in %.1f s, %d wrong\n", done.load(),
              static_cast<unsigned long long>(seed), elements.load(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), wrong.load());
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace chorus_test
