// The board allreduce (core/board_allreduce.h) through the whole C API:
// every dtype and op from 1 element to kBoardAllReduceMaxBytes, one-shot
// (oneshot) and two-phase (direct), one piece and several, is bit-identical
// to the rank-order fold of the reduction kernels on 2, 3 and 4 ranks, as
// threads and as forked processes; board sizes, large sizes and board sizes
// again stay right; the board is taken only where every rank takes it
// (oneshot or direct chosen, outside groups, host streams included);
// PreMulSum and Avg; a warm call allocates nothing, tiny or mid-size
// (allocation_counter.h); and two ranks with a core each read each other's
// inputs in place (threads; processes from their shared heaps) or, when
// either cannot, both run the schedule.
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "allocation_counter.h"
#include "base/half.h"
#include "chorus/chorus.h"
#include "core/board_allreduce.h"
#include "core/handles.h"
#include "kernels/reduce.h"
#include "tests/common/single_threaded_fork.h"

namespace chorus {
namespace {

constexpr int kTimeoutMs = 30000;
const chorusRedOp_t kOps[] = {chorusSum, chorusProd, chorusMax, chorusMin, chorusAvg};

// Inputs with fractions, so that the order of a float sum shows in its bits.
void FillInput(std::vector<uint8_t>* buffer, chorusDataType_t dtype, size_t count, int rank, int salt) {
  const size_t size = DataTypeSize(dtype);
  buffer->assign(count * size, 0);
  for (size_t i = 0; i < count; ++i) {
    const int step = static_cast<int>((rank * 7 + i * 13 + salt * 5) % 23) - 11;
    const double value = step * 0.37 + 0.013 * (rank + 1);
    uint8_t* at = buffer->data() + i * size;
    auto put = [&](auto v) { std::memcpy(at, &v, sizeof(v)); };
    switch (dtype) {
      case chorusInt8:
        put(static_cast<int8_t>(step));
        break;
      case chorusUint8:
        put(static_cast<uint8_t>(step + 11));
        break;
      case chorusInt32:
        put(static_cast<int32_t>(step * 1000 + rank));
        break;
      case chorusUint32:
        put(static_cast<uint32_t>(step + 11) * 7u);
        break;
      case chorusInt64:
        put(static_cast<int64_t>(step * 100003ll - rank));
        break;
      case chorusUint64:
        put(static_cast<uint64_t>(step + 11) * 3u);
        break;
      case chorusFloat16:
        put(FloatToHalf(static_cast<float>(value)));
        break;
      case chorusFloat32:
        put(static_cast<float>(value));
        break;
      case chorusFloat64:
        put(value / 3.0);
        break;
      case chorusBfloat16:
        put(FloatToBfloat16(static_cast<float>(value)));
        break;
      default:
        break;
    }
  }
}

// The oneshot fold: ((x_0 op x_1) op x_2) ..., then / nranks for Avg.
std::vector<uint8_t> RankOrderReference(chorusDataType_t dtype, chorusRedOp_t op, size_t count, int nranks, int salt) {
  const ReduceOp reduce = op == chorusAvg ? ReduceOp::kSum : static_cast<ReduceOp>(op);
  std::vector<uint8_t> result, input;
  FillInput(&result, dtype, count, 0, salt);
  for (int rank = 1; rank < nranks; ++rank) {
    FillInput(&input, dtype, count, rank, salt);
    ReduceKernel(result.data(), result.data(), input.data(), count, dtype, reduce);
  }
  if (op == chorusAvg) DivideKernel(result.data(), count, dtype, nranks);
  return result;
}

// Pins the calling thread (a rank) to the first CPU it may use: all ranks
// on one core share it, so the communicator's shares_cores, and with it the
// board's mid sizes, hold on any machine.
// Pins the calling thread to the `index`-th CPU it may run on (the first
// when there are fewer).
void PinToOneCpu(int index = 0) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) return;
  int first = -1;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    if (first < 0) first = cpu;
    if (index-- > 0) continue;
    first = cpu;
    break;
  }
  if (first < 0) return;
  CPU_ZERO(&set);
  CPU_SET(first, &set);
  ::sched_setaffinity(0, sizeof(set), &set);
}

bool CoresShared(chorusComm_t comm) { return comm->impl->cores_shared(); }

int AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  return ::sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
}

// Ranks pinned to CPUs of their own share none; one CPU: "skip".
std::string CheckCorePerRank(chorusComm_t comm) {
  if (!CoresShared(comm)) return "";
  return AllowedCpus() >= 2 ? "ranks on CPUs of their own share cores" : "skip";
}

// Board rounds of one call with `algo` (forced: by the config).
uint64_t ExpectedRounds(chorusComm_t comm, size_t count, chorusDataType_t dtype, int nranks, Algorithm algo,
                        bool forced = true) {
  const size_t size = DataTypeSize(dtype);
  return BoardRoundsFor(count, size, ChooseBoardPlan(count * size, nranks, algo, forced, CoresShared(comm)));
}

// Every dtype x op from 1 element to the largest board call (tiny, in
// line mode and just past it, mid, one slot, a slot and a bit, several
// slots), out of place and in place;
// "" or the first mismatch. Adds the board rounds the calls should take.
std::string SweepTypesAndOps(chorusComm_t comm, int rank, int nranks, Algorithm algo, uint64_t* rounds) {
  for (int t = 0; t < chorusNumTypes; ++t) {
    const auto dtype = static_cast<chorusDataType_t>(t);
    const size_t size = DataTypeSize(dtype);
    for (chorusRedOp_t op : kOps) {
      // Where ranks share cores there is no line mode: the same sizes by the slot.
      const size_t lines_max = std::max<size_t>(BoardAllReduce::LinesMaxBytes(nranks, CoresShared(comm)), 2048);
      for (size_t count : {size_t{1}, size_t{3}, size_t{17}, lines_max / size, lines_max / size + 1,
                           kBoardTinyBytes / size, kBoardTinyBytes / size + 5,
                           size_t{40000} / size, shm::kBoardPayloadBytes / size,
                           shm::kBoardPayloadBytes / size + 77, kBoardAllReduceMaxBytes / size}) {
        // Calls off the board (direct's tiny sizes) fold in the executor's
        // order, not necessarily the rank order.
        if (ExpectedRounds(comm, count, dtype, nranks, algo) == 0) continue;
        for (bool in_place : {false, true}) {
          const int salt = static_cast<int>(count) + t + static_cast<int>(op);
          std::vector<uint8_t> send, recv(count * size, 0xee);
          FillInput(&send, dtype, count, rank, salt);
          void* out = in_place ? static_cast<void*>(send.data()) : recv.data();
          chorusResult_t result = chorusAllReduce(send.data(), out, count, dtype, op, comm, nullptr);
          *rounds += ExpectedRounds(comm, count, dtype, nranks, algo);
          if (result != chorusSuccess) return StrCat("allreduce failed: ", chorusGetLastError(comm));
          const std::vector<uint8_t> expected = RankOrderReference(dtype, op, count, nranks, salt);
          if (std::memcmp(out, expected.data(), expected.size()) != 0) {
            return StrCat(DataTypeName(dtype), " op ", static_cast<int>(op), " count ", count,
                          in_place ? " in place" : "", ": not the rank-order result");
          }
        }
      }
    }
  }
  return "";
}

// Communicators of `nranks` thread ranks; body(rank, comm) on one thread per
// rank; each rank's message ("" = passed).
std::vector<std::string> RunThreadRanks(int nranks, const char* algo,
                                        const std::function<std::string(int, chorusComm_t)>& body,
                                        bool cpu_per_rank = false) {
  chorusUniqueId id;
  EXPECT_EQ(chorusGetUniqueId(&id), chorusSuccess);
  std::vector<std::string> errors(nranks);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < nranks; ++rank) {
    threads.emplace_back([&, rank] {
      PinToOneCpu(cpu_per_rank ? rank : 0);
      chorusConfig_t config = CHORUS_CONFIG_INITIALIZER;
      config.algo = algo;
      config.timeoutMs = kTimeoutMs;
      chorusComm_t comm = nullptr;
      if (chorusCommInitRankConfig(&comm, nranks, id, rank, &config) != chorusSuccess) {
        errors[rank] = "init failed";
        return;
      }
      errors[rank] = body(rank, comm);
      if (!errors[rank].empty())
        chorusCommAbort(comm);
      else
        chorusCommDestroy(comm);
    });
  }
  for (std::thread& thread : threads) thread.join();
  return errors;
}

void ExpectAllPassed(const std::vector<std::string>& errors) {
  for (size_t rank = 0; rank < errors.size(); ++rank) EXPECT_EQ(errors[rank], "") << "rank " << rank;
}

uint64_t BoardRounds(chorusComm_t comm) { return comm->impl->board_rounds(); }

struct BoardAlgo {
  const char* config;
  Algorithm algo;
};
const BoardAlgo kBoardAlgos[] = {{"allreduce:oneshot", Algorithm::kOneShot}, {"allreduce:direct", Algorithm::kDirect}};

TEST(BoardAllReduceTest, ThreadsBitIdenticalToRankOrderForEveryTypeAndOp) {
  for (const BoardAlgo& algo : kBoardAlgos) {
    for (int nranks : {2, 3, 4}) {
      SCOPED_TRACE(StrCat(nranks, " thread ranks, ", algo.config));
      ExpectAllPassed(RunThreadRanks(nranks, algo.config, [&](int rank, chorusComm_t comm) -> std::string {
        uint64_t rounds = 0;
        std::string error = SweepTypesAndOps(comm, rank, nranks, algo.algo, &rounds);
        if (error.empty() && BoardRounds(comm) != rounds) {
          error = StrCat(BoardRounds(comm), " board rounds where ", rounds, " were expected");
        }
        return error;
      }));
    }
  }
}

// Every rank count and both plans, as processes: 2 and 4 ranks one-shot, 3
// ranks two-phase (the threads above take every pairing; each process trial
// takes about 6 s on 2 cores, so ./test.sh runs three).
// Forks `nranks` rank processes (this process single-threaded) around a
// rendezvous of their own; each runs body(rank, id) and reports "" or its
// error, which is expected to be "" within 50 s.
void RunProcessRanks(int nranks, const std::function<std::string(int, const chorusUniqueId&)>& body) {
  const chorus_test::RendezvousProcess rendezvous;  // this process stays single-threaded for the forks below
  ASSERT_TRUE(rendezvous.ok()) << rendezvous.error();
  const chorusUniqueId id = rendezvous.id();
  constexpr size_t kMessageBytes = 512;
  void* mapped = ::mmap(nullptr, nranks * kMessageBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mapped, MAP_FAILED);
  auto* messages = static_cast<char*>(mapped);
  std::fflush(nullptr);
  std::vector<pid_t> pids;
  for (int rank = 0; rank < nranks; ++rank) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      const std::string error = body(rank, id);
      std::snprintf(messages + rank * kMessageBytes, kMessageBytes, "%s", error.c_str());
      ::_exit(error.empty() ? 0 : 1);
    }
    pids.push_back(pid);
  }
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(50);
  for (int rank = 0; rank < nranks; ++rank) {
    int status = -1;
    while (::waitpid(pids[rank], &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() >= give_up) {
        ::kill(pids[rank], SIGKILL);
        ::waitpid(pids[rank], &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "rank " << rank << " status " << status << ": " << messages + rank * kMessageBytes;
  }
  ::munmap(mapped, nranks * kMessageBytes);
}

TEST(BoardAllReduceTest, ProcessesBitIdenticalToRankOrderForEveryTypeAndOp) {
  for (int trial = 0; trial < 3; ++trial) {
    const int nranks = 2 + trial;
    const BoardAlgo& algo = kBoardAlgos[trial % 2];
    SCOPED_TRACE(StrCat(nranks, " process ranks, ", algo.config));
    RunProcessRanks(nranks, [&](int rank, const chorusUniqueId& id) {
      PinToOneCpu();
      chorusConfig_t config = CHORUS_CONFIG_INITIALIZER;
      config.algo = algo.config;
      config.timeoutMs = kTimeoutMs;
      chorusComm_t comm = nullptr;
      std::string error = "init failed";
      if (chorusCommInitRankConfig(&comm, nranks, id, rank, &config) == chorusSuccess) {
        uint64_t rounds = 0;
        error = SweepTypesAndOps(comm, rank, nranks, algo.algo, &rounds);
        if (error.empty() && BoardRounds(comm) != rounds) error = "board not used as expected";
        chorusCommDestroy(comm);
      }
      return error;
    });
  }
}

// Board, then sizes past the board (the general oneshot or direct), then
// the board again, tiny, one slot and several: every result right, and
// the board rounds as planned.
TEST(BoardAllReduceTest, MixedSizesStayCorrect) {
  for (const BoardAlgo& algo : kBoardAlgos) {
  SCOPED_TRACE(algo.config);
  ExpectAllPassed(RunThreadRanks(3, algo.config, [&](int rank, chorusComm_t comm) -> std::string {
    const size_t counts[] = {2, 1024, 1025, 16384 + 7, kBoardAllReduceMaxBytes / 4 + 1, 262144, 5, 1 << 20, 2,
                             kBoardAllReduceMaxBytes / 4, 3000};
    uint64_t expected_rounds = 0;
    for (int pass = 0; pass < 3; ++pass) {
      for (size_t count : counts) {
        std::vector<float> send(count), recv(count, -1.0f);
        for (size_t i = 0; i < count; ++i) send[i] = static_cast<float>((i % 100) + rank);
        if (chorusAllReduce(send.data(), recv.data(), count, chorusFloat32, chorusSum, comm, nullptr) !=
            chorusSuccess) {
          return StrCat("count ", count, ": ", chorusGetLastError(comm));
        }
        for (size_t i = 0; i < count; ++i) {
          if (recv[i] != static_cast<float>(3 * (i % 100) + 3)) return StrCat("count ", count, ": wrong element ", i);
        }
        expected_rounds += ExpectedRounds(comm, count, chorusFloat32, 3, algo.algo);
        if (BoardRounds(comm) != expected_rounds) return StrCat("count ", count, ": ", BoardRounds(comm), " rounds");
      }
    }
    return "";
  }));
  }
}

// A forced other algorithm never takes the board; groups never do; host
// streams do (the worker runs the same launch).
TEST(BoardAllReduceTest, TakenOnlyForOneshotOutsideGroups) {
  ExpectAllPassed(RunThreadRanks(2, "allreduce:ring", [](int rank, chorusComm_t comm) -> std::string {
    float send[2] = {1.0f + rank, 2.0f}, recv[2] = {0, 0};
    for (int i = 0; i < 10; ++i) {
      if (chorusAllReduce(send, recv, 2, chorusFloat32, chorusSum, comm, nullptr) != chorusSuccess) return "failed";
    }
    if (recv[0] != 3.0f || recv[1] != 4.0f) return "wrong sum";
    return BoardRounds(comm) == 0 ? "" : "ring took the board";
  }));
  ExpectAllPassed(RunThreadRanks(2, "allreduce:oneshot", [](int rank, chorusComm_t comm) -> std::string {
    float send[2] = {1.0f + rank, 2.0f}, recv[2] = {0, 0};
    chorusGroupStart();
    chorusResult_t result = chorusAllReduce(send, recv, 2, chorusFloat32, chorusSum, comm, nullptr);
    if (chorusGroupEnd() != chorusSuccess || result != chorusSuccess) return "group failed";
    if (recv[0] != 3.0f || recv[1] != 4.0f) return "wrong sum in a group";
    if (BoardRounds(comm) != 0) return "a group took the board";
    chorusStream_t stream = nullptr;
    if (chorusStreamCreate(&stream) != chorusSuccess) return "no stream";
    std::vector<float> results(64 * 2, 0.0f);
    for (int i = 0; i < 64; ++i) {
      float input[2] = {static_cast<float>(i + rank), 1.0f};
      // The stream reads the input when it runs: keep each call's own copy.
      std::memcpy(&results[2 * i], input, sizeof(input));
      chorusAllReduce(&results[2 * i], &results[2 * i], 2, chorusFloat32, chorusSum, comm, stream);
    }
    result = chorusStreamSynchronize(stream);
    chorusStreamDestroy(stream);
    if (result != chorusSuccess) return StrCat("stream: ", chorusGetLastError(comm));
    for (int i = 0; i < 64; ++i) {
      if (results[2 * i] != static_cast<float>(2 * i + 1) || results[2 * i + 1] != 2.0f) return "wrong stream sum";
    }
    return BoardRounds(comm) == 64 ? "" : StrCat("stream took ", BoardRounds(comm), " board rounds, not 64");
  }));
}

// PreMulSum scales each input into the rank's slot, then folds in rank order.
TEST(BoardAllReduceTest, PreMulSumScalesIntoTheSlot) {
  ExpectAllPassed(RunThreadRanks(3, "allreduce:oneshot", [](int rank, chorusComm_t comm) -> std::string {
    float scalar = 0.37f;
    chorusRedOp_t op;
    if (chorusRedOpCreatePreMulSum(&op, &scalar, chorusFloat32, chorusScalarHostImmediate, comm) != chorusSuccess) {
      return "no PreMulSum op";
    }
    constexpr size_t kCount = 33;
    std::vector<uint8_t> send, expected, input, recv(kCount * sizeof(float));
    FillInput(&send, chorusFloat32, kCount, rank, 9);
    for (int r = 0; r < 3; ++r) {
      FillInput(&input, chorusFloat32, kCount, r, 9);
      ScaleKernel(input.data(), input.data(), kCount, chorusFloat32, &scalar);
      if (r == 0) {
        expected = input;
      } else {
        ReduceKernel(expected.data(), expected.data(), input.data(), kCount, chorusFloat32, ReduceOp::kSum);
      }
    }
    if (chorusAllReduce(send.data(), recv.data(), kCount, chorusFloat32, op, comm, nullptr) != chorusSuccess) {
      return StrCat("allreduce failed: ", chorusGetLastError(comm));
    }
    if (recv != expected) return "not the rank-order sum of the scaled inputs";
    return BoardRounds(comm) == 1 ? "" : "board not used";
  }));
}

TEST(BoardAllReduceTest, WarmCallAllocatesNothing) {
  std::vector<long> allocations(2, -1);
  ExpectAllPassed(RunThreadRanks(2, "allreduce:oneshot", [&](int rank, chorusComm_t comm) -> std::string {
    float send[2] = {1.0f + rank, 2.0f}, recv[2] = {0, 0};
    for (int i = 0; i < 2000; ++i) {
      if (i == 1000) testing::ResetThreadAllocations();
      if (chorusAllReduce(send, recv, 2, chorusFloat32, chorusSum, comm, nullptr) != chorusSuccess) return "failed";
    }
    allocations[rank] = testing::ThreadAllocations();
    if (recv[0] != 3.0f || recv[1] != 4.0f) return "wrong sum";
    return BoardRounds(comm) == 2000 ? "" : "board not used";
  }));
  EXPECT_EQ(allocations, std::vector<long>({0, 0}));
}

// Mid-size calls of both plans, several pieces each, allocate nothing warm.
TEST(BoardAllReduceTest, WarmMidSizeCallAllocatesNothing) {
  for (const BoardAlgo& algo : kBoardAlgos) {
    SCOPED_TRACE(algo.config);
    std::vector<long> allocations(2, -1);
    ExpectAllPassed(RunThreadRanks(2, algo.config, [&](int rank, chorusComm_t comm) -> std::string {
      const size_t count = kBoardAllReduceMaxBytes / sizeof(float) - 3;
      std::vector<float> send(count, 1.0f + rank), recv(count, 0.0f);
      for (int i = 0; i < 200; ++i) {
        if (i == 100) testing::ResetThreadAllocations();
        if (chorusAllReduce(send.data(), recv.data(), count, chorusFloat32, chorusSum, comm, nullptr) != chorusSuccess) {
          return "failed";
        }
      }
      allocations[rank] = testing::ThreadAllocations();
      for (float value : recv) {
        if (value != 3.0f) return "wrong sum";
      }
      const uint64_t rounds = 200 * ExpectedRounds(comm, count, chorusFloat32, 2, algo.algo);
      return BoardRounds(comm) == rounds && rounds > 0 ? "" : "board not used";
    }));
    EXPECT_EQ(allocations, std::vector<long>({0, 0}));
  }
}

// The tuner's choice on ranks that share a core: the board up to its
// largest size (one-shot, then two-phase), the general path beyond, every
// rank alike and every result right.
TEST(BoardAllReduceTest, TunerChoiceTakesTheBoardWhereRanksShareCores) {
  ExpectAllPassed(RunThreadRanks(kBoardManyRanks, nullptr, [&](int rank, chorusComm_t comm) -> std::string {
    if (!CoresShared(comm)) return "ranks pinned to one CPU do not share cores";
    const size_t counts[] = {5, 1000, 8192, 20000, 200000, kBoardAllReduceMaxBytes / 4, 300000, 7};
    uint64_t expected_rounds = 0;
    for (size_t count : counts) {
      std::vector<float> send(count), recv(count, -1.0f);
      for (size_t i = 0; i < count; ++i) send[i] = static_cast<float>((i % 50) * (rank + 1));
      if (chorusAllReduce(send.data(), recv.data(), count, chorusFloat32, chorusSum, comm, nullptr) != chorusSuccess) {
        return StrCat("count ", count, ": ", chorusGetLastError(comm));
      }
      for (size_t i = 0; i < count; ++i) {
        if (recv[i] != static_cast<float>(21 * (i % 50))) return StrCat("count ", count, ": wrong element ", i);
      }
      expected_rounds += ExpectedRounds(comm, count, chorusFloat32, kBoardManyRanks, Algorithm::kRing, false);
      if (BoardRounds(comm) != expected_rounds) return StrCat("count ", count, ": ", BoardRounds(comm), " rounds");
    }
    return expected_rounds == 1 + 1 + 1 + 2 + 2 * 4 + 2 * 4 + 0 + 1 ? "" : "unexpected plans";
  }));
}

// The plan: oneshot one-shot and direct two-phase above the tiny sizes,
// nothing past the largest board size (with a core per rank: past
// kBoardSpareCoresMaxBytes) or for other forced algorithms; the tuner's
// choice gives way to the board where ranks share cores.
TEST(BoardAllReduceTest, PlanFollowsTheForcedAlgorithm) {
  EXPECT_EQ(ChooseBoardPlan(8, 4, Algorithm::kOneShot, true, false), BoardPlan::kOneShot);
  EXPECT_EQ(ChooseBoardPlan(8, 4, Algorithm::kDirect, true, false), BoardPlan::kNone);
  EXPECT_EQ(ChooseBoardPlan(8, 1, Algorithm::kOneShot, true, false), BoardPlan::kNone);
  EXPECT_EQ(ChooseBoardPlan(kBoardTinyBytes + 1, 4, Algorithm::kOneShot, true, true), BoardPlan::kOneShot);
  EXPECT_EQ(ChooseBoardPlan(kBoardTinyBytes + 1, 4, Algorithm::kDirect, true, true), BoardPlan::kTwoPhase);
  EXPECT_EQ(ChooseBoardPlan(kBoardAllReduceMaxBytes, 8, Algorithm::kDirect, true, true), BoardPlan::kTwoPhase);
  EXPECT_EQ(ChooseBoardPlan(kBoardAllReduceMaxBytes + 1, 8, Algorithm::kDirect, true, true), BoardPlan::kNone);
  // A core per rank: the board only up to kBoardSpareCoresMaxBytes.
  EXPECT_EQ(ChooseBoardPlan(kBoardSpareCoresMaxBytes, 2, Algorithm::kDirect, true, false), BoardPlan::kTwoPhase);
  EXPECT_EQ(ChooseBoardPlan(kBoardSpareCoresMaxBytes + 1, 2, Algorithm::kOneShot, true, false), BoardPlan::kNone);
  EXPECT_EQ(ChooseBoardPlan(65536, 4, Algorithm::kRing, true, false), BoardPlan::kNone);
  // Ranks sharing cores, the tuner's choice: the board whatever it chose.
  EXPECT_EQ(ChooseBoardPlan(8, 8, Algorithm::kRing, false, true), BoardPlan::kOneShot);
  EXPECT_EQ(ChooseBoardPlan(kBoardOneShotMaxBytes, 4, Algorithm::kDirect, false, true), BoardPlan::kOneShot);
  EXPECT_EQ(ChooseBoardPlan(kBoardOneShotMaxBytes + 4, 4, Algorithm::kHalvingDoubling, false, true),
            BoardPlan::kTwoPhase);
  EXPECT_EQ(ChooseBoardPlan(kBoardAllReduceMaxBytes, kBoardManyRanks, Algorithm::kRing, false, true),
            BoardPlan::kTwoPhase);
  // Few ranks past kBoardFewRanksMaxBytes: the tuner's choice, as forced.
  EXPECT_EQ(ChooseBoardPlan(kBoardFewRanksMaxBytes + 4, 4, Algorithm::kRing, false, true), BoardPlan::kNone);
  EXPECT_EQ(ChooseBoardPlan(kBoardFewRanksMaxBytes + 4, 4, Algorithm::kDirect, false, true), BoardPlan::kTwoPhase);
  EXPECT_EQ(ChooseBoardPlan(kBoardAllReduceMaxBytes + 4, 8, Algorithm::kDirect, false, true), BoardPlan::kNone);
  // A core per rank, the tuner's choice: as forced.
  EXPECT_EQ(ChooseBoardPlan(8192, 2, Algorithm::kRing, false, false), BoardPlan::kNone);
  EXPECT_EQ(ChooseBoardPlan(8192, 2, Algorithm::kOneShot, false, false), BoardPlan::kOneShot);
  EXPECT_EQ(ChooseBoardPlan(8192, 2, Algorithm::kDirect, false, false), BoardPlan::kTwoPhase);
  // Two ranks with a core each, nothing forced: read in place to 64 MiB.
  EXPECT_EQ(ChooseBoardPlan(65536, 2, Algorithm::kOneShot, false, false), BoardPlan::kReadInPlace);
  EXPECT_EQ(ChooseBoardPlan(kBoardSpareCoresMaxBytes + 1, 2, Algorithm::kRing, false, false),
            BoardPlan::kReadInPlace);
  EXPECT_EQ(ChooseBoardPlan(kBoardReadInPlaceMaxBytes, 2, Algorithm::kRing, false, false), BoardPlan::kReadInPlace);
  EXPECT_EQ(ChooseBoardPlan(kBoardReadInPlaceMaxBytes + 4, 2, Algorithm::kRing, false, false), BoardPlan::kNone);
  EXPECT_EQ(ChooseBoardPlan(65536, 2, Algorithm::kRing, true, false), BoardPlan::kNone);
  EXPECT_EQ(ChooseBoardPlan(65536, 3, Algorithm::kRing, false, false), BoardPlan::kNone);
  EXPECT_EQ(BoardRoundsFor(1 << 20, 4, BoardPlan::kReadInPlace), 2u);
  // Forced, sharing cores: the forced algorithm decides.
  EXPECT_EQ(ChooseBoardPlan(65536, 8, Algorithm::kRing, true, true), BoardPlan::kNone);
  EXPECT_EQ(BoardRoundsFor(0, 4, BoardPlan::kOneShot), 1u);
  EXPECT_EQ(BoardRoundsFor(shm::kBoardPayloadBytes / 4, 4, BoardPlan::kOneShot), 1u);
  EXPECT_EQ(BoardRoundsFor(shm::kBoardPayloadBytes / 4 + 1, 4, BoardPlan::kTwoPhase), 4u);
}

// Read in place: two ranks with a core each, nothing forced, from past
// kBoardSpareCoresMaxBytes. Out of place every call folds both inputs read
// where they are (2 board rounds, the rank-order result); in place, or
// PreMulSum, both ranks run the schedule after the first round.
std::string SweepReadInPlace(chorusComm_t comm, int rank, bool inputs_readable,
                             const std::function<uint8_t*(size_t)>& input_memory) {
  uint64_t rounds = 0;
  for (int t = 0; t < chorusNumTypes; ++t) {
    const auto dtype = static_cast<chorusDataType_t>(t);
    const size_t size = DataTypeSize(dtype);
    for (chorusRedOp_t op : kOps) {
      for (size_t count : {kBoardSpareCoresMaxBytes / size + 1, size_t{40000} / size + 3, size_t{1 << 20} / size}) {
        for (bool in_place : {false, true}) {
          const int salt = static_cast<int>(count) + t + static_cast<int>(op);
          std::vector<uint8_t> send, recv(count * size, 0xee);
          FillInput(&send, dtype, count, rank, salt);
          uint8_t* input = input_memory(count * size);
          std::memcpy(input, send.data(), send.size());
          void* out = in_place ? static_cast<void*>(input) : recv.data();
          if (chorusAllReduce(input, out, count, dtype, op, comm, nullptr) != chorusSuccess) {
            return StrCat("allreduce failed: ", chorusGetLastError(comm));
          }
          rounds += in_place || !inputs_readable ? 1 : 2;
          // Two operands: every op is exact whichever way round they fold.
          const std::vector<uint8_t> expected = RankOrderReference(dtype, op, count, 2, salt);
          if (std::memcmp(out, expected.data(), expected.size()) != 0) {
            return StrCat(DataTypeName(dtype), " op ", static_cast<int>(op), " count ", count,
                          in_place ? " in place" : "", ": not the rank-order result");
          }
          if (BoardRounds(comm) != rounds) {
            return StrCat(DataTypeName(dtype), " count ", count, in_place ? " in place" : "", ": ",
                          BoardRounds(comm), " board rounds, expected ", rounds);
          }
        }
      }
    }
  }
  return "";
}

TEST(BoardAllReduceTest, TwoThreadRanksReadEachOthersInputsInPlace) {
  ExpectAllPassed(RunThreadRanks(2, "", [](int rank, chorusComm_t comm) -> std::string {
    const std::string cores = CheckCorePerRank(comm);
    if (!cores.empty()) return cores == "skip" ? "" : cores;  // one CPU: the board's other plans
    std::vector<uint8_t> memory;
    return SweepReadInPlace(comm, rank, true, [&](size_t bytes) {
      memory.assign(bytes, 0);
      return memory.data();
    });
  }, /*cpu_per_rank=*/true));
}

// Two processes: inputs from chorusMemAlloc are read in place; ordinary
// memory is not (both ranks run the schedule); mixed, neither is.
TEST(BoardAllReduceTest, TwoProcessesReadSharedHeapInputsInPlace) {
  enum Memory { kHeap, kOrdinary, kMixed };
  for (Memory memory : {kHeap, kOrdinary, kMixed}) {
    SCOPED_TRACE(memory == kHeap ? "shared heap" : memory == kOrdinary ? "ordinary memory" : "one of each");
    RunProcessRanks(2, [&](int rank, const chorusUniqueId& id) {
      PinToOneCpu(rank);
      chorusConfig_t config = CHORUS_CONFIG_INITIALIZER;
      config.timeoutMs = kTimeoutMs;
      chorusComm_t comm = nullptr;
      if (chorusCommInitRankConfig(&comm, 2, id, rank, &config) != chorusSuccess) return std::string("init failed");
      const bool heap = memory == kHeap || (memory == kMixed && rank == 0);
      void* block = nullptr;
      std::vector<uint8_t> ordinary;
      std::string error = CheckCorePerRank(comm);
      if (!error.empty()) {
        if (error == "skip") error = "";  // one CPU: the board's other plans
      } else if (heap && chorusMemAlloc(&block, 1 << 20) != chorusSuccess) {
        error = StrCat("chorusMemAlloc: ", chorusGetLastError(nullptr));
      } else {
        error = SweepReadInPlace(comm, rank, memory == kHeap, [&](size_t bytes) -> uint8_t* {
          if (heap) return static_cast<uint8_t*>(block);
          ordinary.assign(bytes, 0);
          return ordinary.data();
        });
      }
      if (block != nullptr) chorusMemFree(block);
      chorusCommDestroy(comm);
      return error;
    });
  }
}

}  // namespace
}  // namespace chorus
