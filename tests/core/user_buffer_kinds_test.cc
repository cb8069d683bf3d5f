// User buffers by memory kind through the C API: each rank's communicator
// presents a fake device range (tests/core/fake_device_memory.h; its
// addresses fault when the CPU touches them) as device memory, so every
// call below takes the path a cudaMalloc'ed buffer takes on a GPU machine.
// Collectives and send/receive give exact results through the fake engine
// and staging (the executor's, and around the shm board); the paths that
// read user buffers on the CPU refuse device memory with a message naming
// the call, the buffer and its kind, and write nothing.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "chorus/chorus.h"
#include "core/comm_factory.h"
#include "core/handles.h"
#include "fake_device_memory.h"

namespace chorus::testing {
namespace {

constexpr size_t kDeviceBytes = 256 * 1024;
// Where the tests put their buffers on each rank's fake device.
constexpr size_t kSendAt = 0;
constexpr size_t kRecvAt = 128 * 1024;

// One rank of a test: its communicator and its fake device.
struct DeviceRank {
  int rank = 0;
  int nranks = 0;
  chorusComm_t comm = nullptr;
  FakeDeviceMemory* device = nullptr;
  FakeDeviceEngine* engine = nullptr;

  template <typename T>
  T* At(size_t offset) const {
    return reinterpret_cast<T*>(device->data() + offset);
  }
  template <typename T>
  void Put(size_t offset, const std::vector<T>& values) const {
    device->Upload(offset, values.data(), values.size() * sizeof(T));
  }
  template <typename T>
  std::vector<T> Get(size_t offset, size_t count) const {
    std::vector<T> values(count);
    device->Download(values.data(), offset, count * sizeof(T));
    return values;
  }
  uint64_t board_rounds() const { return comm->impl->board_rounds(); }
  std::string last_error() const { return chorusGetLastError(comm); }
};

// Runs body on `nranks` thread ranks, each with a fake device its
// communicator classifies as kFakeDevice (with_engine: served by the fake
// engine; otherwise by no engine, as a kind this build lacks). `algo`: the
// config's algorithm string, or null.
void RunRanks(int nranks, const char* algo, const std::function<void(DeviceRank&)>& body, bool with_engine = true) {
  chorusUniqueId id;
  ASSERT_TRUE(MakeUniqueId(&id).ok());
  UniqueIdContents contents;
  ASSERT_TRUE(DecodeUniqueId(id, &contents).ok());
  std::vector<std::thread> threads;
  for (int rank = 0; rank < nranks; ++rank) {
    threads.emplace_back([&, rank] {
      FakeDeviceMemory device(kDeviceBytes);
      FakeDeviceEngine engine(&device);
      FakeDeviceUserMemory user_memory =
          with_engine ? FakeDeviceUserMemory(&device, &engine) : FakeDeviceUserMemory(&device);
      chorusConfig_t config = CHORUS_CONFIG_INITIALIZER;
      config.algo = algo;
      config.timeoutMs = 20000;
      CommOptions options;
      Status status = ResolveOptions(&config, &options);
      ASSERT_TRUE(status.ok()) << status.message();
      options.use_tuner = false;   // no calibration: seconds matter here
      options.chunk_bytes = 1024;  // several chunks per buffer through the staging slots
      options.user_memory = &user_memory;
      std::unique_ptr<chorusComm> comm;
      status = CreateCommWithOptions(contents, nranks, rank, options, &comm);
      ASSERT_TRUE(status.ok()) << "rank " << rank << ": " << status.message();
      DeviceRank self{rank, nranks, comm.get(), &device, &engine};
      body(self);
      EXPECT_EQ(chorusCommDestroy(comm.release()), chorusSuccess);
    });
  }
  for (std::thread& thread : threads) thread.join();
}

// Rank r's input element i: r * 1000 + i.
std::vector<int32_t> Input(int rank, size_t count, size_t first = 0) {
  std::vector<int32_t> values(count);
  for (size_t i = 0; i < count; ++i) values[i] = rank * 1000 + static_cast<int32_t>(first + i);
  return values;
}

int32_t SumOver(int nranks, size_t i) { return 1000 * nranks * (nranks - 1) / 2 + nranks * static_cast<int32_t>(i); }

void ExpectSums(const DeviceRank& r, size_t offset, size_t count) {
  const std::vector<int32_t> got = r.Get<int32_t>(offset, count);
  for (size_t i = 0; i < count; ++i) ASSERT_EQ(got[i], SumOver(r.nranks, i)) << "rank " << r.rank << " element " << i;
}

TEST(UserBufferKindsTest, AllReduceOnDeviceBuffersStagesThroughTheEngine) {
  constexpr size_t kCount = 3000;  // 12 KB: 12 chunks each way
  RunRanks(3, "allreduce:ring", [&](DeviceRank& r) {
    r.Put(kSendAt, Input(r.rank, kCount));
    ASSERT_EQ(chorusAllReduce(r.At<int32_t>(kSendAt), r.At<int32_t>(kRecvAt), kCount, chorusInt32, chorusSum, r.comm,
                              nullptr),
              chorusSuccess)
        << r.last_error();
    ExpectSums(r, kRecvAt, kCount);
    // In place.
    r.Put(kRecvAt, Input(r.rank, kCount));
    ASSERT_EQ(chorusAllReduce(r.At<int32_t>(kRecvAt), r.At<int32_t>(kRecvAt), kCount, chorusInt32, chorusSum, r.comm,
                              nullptr),
              chorusSuccess)
        << r.last_error();
    ExpectSums(r, kRecvAt, kCount);
    EXPECT_EQ(r.board_rounds(), 0u);
    EXPECT_GT(r.engine->counts().copies_from_device, 0u);
    EXPECT_GT(r.engine->counts().copies_to_device, 0u);
    EXPECT_EQ(r.engine->counts().copies_on_host, 0u);
  });
}

TEST(UserBufferKindsTest, AllReduceOnTheBoardStagesAroundIt) {
  constexpr size_t kCount = 100;  // 400 B: the board's one-shot, one round
  RunRanks(3, "allreduce:oneshot", [&](DeviceRank& r) {
    r.Put(kSendAt, Input(r.rank, kCount));
    ASSERT_EQ(chorusAllReduce(r.At<int32_t>(kSendAt), r.At<int32_t>(kRecvAt), kCount, chorusInt32, chorusSum, r.comm,
                              nullptr),
              chorusSuccess)
        << r.last_error();
    ExpectSums(r, kRecvAt, kCount);
    EXPECT_EQ(r.board_rounds(), 1u);
    // The input into one host copy, the result out of it.
    EXPECT_EQ(r.engine->counts().copies_from_device, 1u);
    EXPECT_EQ(r.engine->counts().copies_to_device, 1u);
    EXPECT_EQ(r.engine->counts().bytes_to_device, kCount * sizeof(int32_t));
  });
}

// Avg and PreMulSum scale on the CPU: on device buffers through host copies
// moved by the engine, on the executor's path and on the board's.
class ScaledReductionsTest : public ::testing::TestWithParam<const char*> {};

TEST_P(ScaledReductionsTest, AvgAndPreMulSumOnDeviceBuffers) {
  constexpr size_t kCount = 500;
  RunRanks(3, GetParam(), [&](DeviceRank& r) {
    // (rank + 1) * i: sums 6 i, exact in double, and so are their thirds
    // and halves.
    std::vector<double> input(kCount);
    for (size_t i = 0; i < kCount; ++i) input[i] = (r.rank + 1) * static_cast<double>(i);
    r.Put(kSendAt, input);
    ASSERT_EQ(chorusAllReduce(r.At<double>(kSendAt), r.At<double>(kRecvAt), kCount, chorusFloat64, chorusAvg, r.comm,
                              nullptr),
              chorusSuccess)
        << r.last_error();
    std::vector<double> got = r.Get<double>(kRecvAt, kCount);
    for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(got[i], 2.0 * static_cast<double>(i)) << "Avg element " << i;

    double half = 0.5;
    chorusRedOp_t premul;
    ASSERT_EQ(chorusRedOpCreatePreMulSum(&premul, &half, chorusFloat64, chorusScalarHostImmediate, r.comm),
              chorusSuccess);
    ASSERT_EQ(
        chorusAllReduce(r.At<double>(kSendAt), r.At<double>(kRecvAt), kCount, chorusFloat64, premul, r.comm, nullptr),
        chorusSuccess)
        << r.last_error();
    got = r.Get<double>(kRecvAt, kCount);
    for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(got[i], 3.0 * static_cast<double>(i)) << "PreMulSum element " << i;
    EXPECT_EQ(chorusRedOpDestroy(premul, r.comm), chorusSuccess);
    // The user's input stays as it was (PreMulSum scales a private copy).
    EXPECT_EQ(r.Get<double>(kSendAt, kCount), input);
  });
}

INSTANTIATE_TEST_SUITE_P(ExecutorAndBoard, ScaledReductionsTest,
                         ::testing::Values("allreduce:ring", "allreduce:oneshot"));

TEST(UserBufferKindsTest, DataMovementAndReduceScatterOnDeviceBuffers) {
  constexpr size_t kCount = 700;
  RunRanks(3, nullptr, [&](DeviceRank& r) {
    const int n = r.nranks;
    // Broadcast from rank 1.
    r.Put(kSendAt, Input(r.rank, kCount));
    ASSERT_EQ(chorusBroadcast(r.At<int32_t>(kSendAt), r.At<int32_t>(kRecvAt), kCount, chorusInt32, 1, r.comm, nullptr),
              chorusSuccess)
        << r.last_error();
    EXPECT_EQ(r.Get<int32_t>(kRecvAt, kCount), Input(1, kCount));

    // AllGather: every rank's block in rank order.
    ASSERT_EQ(chorusAllGather(r.At<int32_t>(kSendAt), r.At<int32_t>(kRecvAt), kCount, chorusInt32, r.comm, nullptr),
              chorusSuccess)
        << r.last_error();
    const std::vector<int32_t> gathered = r.Get<int32_t>(kRecvAt, kCount * n);
    for (int from = 0; from < n; ++from) {
      EXPECT_EQ(std::vector<int32_t>(gathered.begin() + from * kCount, gathered.begin() + (from + 1) * kCount),
                Input(from, kCount))
          << "block of rank " << from;
    }

    // ReduceScatter: this rank's block of the sums.
    r.Put(kSendAt, Input(r.rank, kCount * n));
    ASSERT_EQ(chorusReduceScatter(r.At<int32_t>(kSendAt), r.At<int32_t>(kRecvAt), kCount, chorusInt32, chorusSum,
                                  r.comm, nullptr),
              chorusSuccess)
        << r.last_error();
    const std::vector<int32_t> block = r.Get<int32_t>(kRecvAt, kCount);
    for (size_t i = 0; i < kCount; ++i) {
      ASSERT_EQ(block[i], SumOver(n, r.rank * kCount + i)) << "rank " << r.rank << " element " << i;
    }
    EXPECT_EQ(r.engine->counts().copies_on_host, 0u);
  });
}

TEST(UserBufferKindsTest, SendAndReceiveOnDeviceBuffers) {
  constexpr size_t kCount = 900;
  RunRanks(3, nullptr, [&](DeviceRank& r) {
    const int next = (r.rank + 1) % r.nranks, previous = (r.rank + r.nranks - 1) % r.nranks;
    r.Put(kSendAt, Input(r.rank, kCount));
    // Around the ring, and to itself (a local copy, device to device).
    constexpr size_t kSelfAt = kRecvAt + 64 * 1024;
    ASSERT_EQ(chorusGroupStart(), chorusSuccess);
    EXPECT_EQ(chorusSend(r.At<int32_t>(kSendAt), kCount, chorusInt32, next, r.comm, nullptr), chorusSuccess);
    EXPECT_EQ(chorusRecv(r.At<int32_t>(kRecvAt), kCount, chorusInt32, previous, r.comm, nullptr), chorusSuccess);
    EXPECT_EQ(chorusSend(r.At<int32_t>(kSendAt), kCount, chorusInt32, r.rank, r.comm, nullptr), chorusSuccess);
    EXPECT_EQ(chorusRecv(r.At<int32_t>(kSelfAt), kCount, chorusInt32, r.rank, r.comm, nullptr), chorusSuccess);
    ASSERT_EQ(chorusGroupEnd(), chorusSuccess) << r.last_error();
    EXPECT_EQ(r.Get<int32_t>(kRecvAt, kCount), Input(previous, kCount));
    EXPECT_EQ(r.Get<int32_t>(kSelfAt, kCount), Input(r.rank, kCount));
    EXPECT_GE(r.engine->counts().copies_on_device, 1u);
  });
}

// Each refusal is local (nothing is launched), so the ranks need not agree;
// an allreduce after them shows the communicator still works.
TEST(UserBufferKindsTest, CpuPathsRefuseDeviceBuffersAndWriteNothing) {
  constexpr size_t kCount = 64;
  RunRanks(2, nullptr, [&](DeviceRank& r) {
    const std::vector<float> sentinel(kCount, -7.0f);
    std::vector<float> host(sentinel);
    r.Put(kSendAt, std::vector<float>(kCount, 1.0f));
    r.Put(kRecvAt, sentinel);

    // A device send with a host receive, and the other way round.
    EXPECT_EQ(chorusAllReduce(r.At<float>(kSendAt), host.data(), kCount, chorusFloat32, chorusSum, r.comm, nullptr),
              chorusInvalidArgument);
    EXPECT_EQ(r.last_error(),
              "chorusAllReduce: sendbuff is fake device memory but recvbuff is host memory; both must be device "
              "memory or both host memory");
    EXPECT_EQ(host, sentinel);
    EXPECT_EQ(chorusAllGather(host.data(), r.At<float>(kRecvAt), kCount / 2, chorusFloat32, r.comm, nullptr),
              chorusInvalidArgument);
    EXPECT_EQ(r.last_error(),
              "chorusAllGather: sendbuff is host memory but recvbuff is fake device memory; both must be device "
              "memory or both host memory");
    EXPECT_EQ(r.Get<float>(kRecvAt, kCount), sentinel);

    // Compressed allreduce: the codecs run on the CPU.
    chorusCompressState_t state = nullptr;
    ASSERT_EQ(chorusCompressStateCreate(&state, chorusCompressFp16, kCount, chorusFloat32, r.comm), chorusSuccess);
    EXPECT_EQ(chorusAllReduceCompressed(r.At<float>(kSendAt), r.At<float>(kRecvAt), kCount, chorusFloat32, state,
                                        r.comm, nullptr),
              chorusInvalidArgument);
    EXPECT_EQ(r.last_error(),
              "chorusAllReduceCompressed: sendbuff is fake device memory, which the CPU code of the compression "
              "codecs cannot read; pass host memory");
    EXPECT_EQ(r.Get<float>(kRecvAt, kCount), sentinel);
    unsigned long long on_wire = 1, uncompressed = 1;
    EXPECT_EQ(chorusCompressStateGetBytes(state, &on_wire, &uncompressed), chorusSuccess);
    EXPECT_EQ(on_wire, 0u);
    EXPECT_EQ(uncompressed, 0u);
    EXPECT_EQ(chorusCompressStateDestroy(state), chorusSuccess);

    // Gossip: the average is taken on the CPU; the step does not advance.
    chorusGossipState_t gossip = {chorusGossipCube, 0, 0, 0};
    EXPECT_EQ(chorusGossip(host.data(), r.At<float>(kRecvAt), kCount, chorusFloat32, &gossip, r.comm, nullptr),
              chorusInvalidArgument);
    EXPECT_EQ(r.last_error(),
              "chorusGossip: recvbuff is fake device memory, which the CPU code of gossip averaging cannot read; "
              "pass host memory");
    EXPECT_EQ(gossip.step, 0u);
    EXPECT_EQ(r.Get<float>(kRecvAt, kCount), sentinel);

    // A PreMulSum scalar is read on the CPU.
    chorusRedOp_t op = chorusMax;
    EXPECT_EQ(chorusRedOpCreatePreMulSum(&op, r.At<float>(kSendAt), chorusFloat32, chorusScalarDevice, r.comm),
              chorusInvalidArgument);
    EXPECT_EQ(r.last_error(),
              "chorusRedOpCreatePreMulSum: scalar is fake device memory, which the CPU code of PreMulSum cannot "
              "read; pass host memory");
    EXPECT_EQ(op, chorusMax);

    ASSERT_EQ(
        chorusAllReduce(r.At<float>(kSendAt), r.At<float>(kRecvAt), kCount, chorusFloat32, chorusSum, r.comm, nullptr),
        chorusSuccess)
        << r.last_error();
    EXPECT_EQ(r.Get<float>(kRecvAt, kCount), std::vector<float>(kCount, 2.0f));
  });
}

TEST(UserBufferKindsTest, AKindWithoutAnEngineIsRefusedAtTheCall) {
  RunRanks(
      2, nullptr,
      [&](DeviceRank& r) {
        EXPECT_EQ(chorusBroadcast(r.At<int32_t>(kSendAt), r.At<int32_t>(kRecvAt), 10, chorusInt32, 0, r.comm, nullptr),
                  chorusInvalidArgument);
        // Rank 1 passes no send buffer to a broadcast from rank 0.
        EXPECT_EQ(r.last_error(), std::string("chorusBroadcast: ") + (r.rank == 0 ? "sendbuff" : "recvbuff") +
                                      " is fake device memory, which this build cannot copy or reduce (configure "
                                      "with -Dcuda=auto)");
        EXPECT_EQ(chorusSend(r.At<int32_t>(kSendAt), 10, chorusInt32, 1 - r.rank, r.comm, nullptr),
                  chorusInvalidArgument);
        EXPECT_EQ(r.last_error(),
                  "chorusSend: sendbuff is fake device memory, which this build cannot copy or reduce (configure with "
                  "-Dcuda=auto)");
      },
      /*with_engine=*/false);
}

}  // namespace
}  // namespace chorus::testing
