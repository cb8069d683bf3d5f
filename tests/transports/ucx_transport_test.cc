// UcxTransport: ranks as threads, then as processes (fork + exec of this
// binary, since UCX does not survive a fork after its initialisation), over
// UCX's tcp and shared-memory (posix, sysv) transports. Skipped when Chorus
// is built without UCX.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "chorus_build_config.h"
#include "tests/transports/transport_test_util.h"
#include "transports/transport_registry.h"
#if CHORUS_HAVE_UCX
#include "transports/ucx/ucx_address.h"
#include "transports/ucx/ucx_tag.h"
#include "transports/ucx/ucx_transport.h"
#endif

namespace chorus {
namespace {

#if CHORUS_HAVE_UCX

using transport_test::DestroyTogether;
using transport_test::ForEachRank;
using transport_test::kTestTimeoutMs;
using transport_test::Pattern;
using transport_test::WaitAll;

UcxOptions Options(int rank, int nranks, const std::string& tls) {
  UcxOptions options;
  options.rank = rank;
  options.nranks = nranks;
  options.tls = tls;
  return options;
}

// Creates and connects `nranks` transports in this process, one thread per rank.
std::vector<std::unique_ptr<Transport>> ConnectedMesh(int nranks, const std::string& tls = "") {
  return transport_test::ConnectedMesh(nranks, [nranks, &tls](int rank, std::unique_ptr<Transport>* transport) {
    return CreateUcxTransport(Options(rank, nranks, tls), transport);
  });
}

const std::vector<size_t> kSizes = {0, 1, 13, 4096, 65536 + 7, 1 << 20, 4 << 20};

Status ExchangeAllSizes(Transport* transport, int rank, int nranks) {
  return transport_test::ExchangeAllSizes(transport, rank, nranks, kSizes);
}

// 300 messages of varying sizes to one peer under one tag arrive in order.
Status SendInOrder(Transport* transport, int rank) {
  constexpr int kMessages = 300;
  const int peer = 1 - rank;
  std::vector<std::vector<uint32_t>> buffers(kMessages);
  std::vector<TransferRequest> requests(kMessages);
  std::vector<TransferRequest*> pending;
  for (int k = 0; k < kMessages; ++k) {
    const size_t words = (k % 7 == 0) ? 40000 : 1 + k % 5;  // rendezvous among eager messages
    buffers[k].assign(words, rank == 0 ? static_cast<uint32_t>(k) : 0xFFFFFFFFu);
    requests[k].buffer = buffers[k].data();
    requests[k].bytes = words * sizeof(uint32_t);
    requests[k].tag = 7;
    Endpoint* endpoint = transport->endpoint(peer);
    CHORUS_RETURN_IF_ERROR(rank == 0 ? endpoint->PostSend(&requests[k]) : endpoint->PostRecv(&requests[k]));
    pending.push_back(&requests[k]);
  }
  CHORUS_RETURN_IF_ERROR(WaitAll(transport, pending));
  if (rank == 1) {
    for (int k = 0; k < kMessages; ++k) {
      for (uint32_t word : buffers[k]) {
        if (word != static_cast<uint32_t>(k)) return InternalError("message ", k, " arrived out of order");
      }
    }
  }
  return Status::Ok();
}

TEST(UcxTagTest, NumbersEachDirectionApart) {
  EXPECT_NE(ucx::MessageTag(3, 5, 7), ucx::MessageTag(4, 5, 7));
  EXPECT_NE(ucx::MessageTag(3, 5, 7), ucx::MessageTag(3, 6, 7));
  // A receive matches the rank and the number, whatever the Chorus tag.
  EXPECT_EQ(ucx::MessageTag(3, 5, 7) & ucx::kMessageMask, ucx::MessageTag(3, 5, 8) & ucx::kMessageMask);
  EXPECT_NE(ucx::CheckOf(ucx::MessageTag(3, 5, 7)), ucx::CheckOf(ucx::MessageTag(3, 5, 8)));
  EXPECT_EQ(ucx::CheckOf(ucx::MessageTag(3, 5, 7)), ucx::TagCheck(7));
  // Tags that differ only in a high bit differ in their check too.
  EXPECT_NE(ucx::TagCheck(7), ucx::TagCheck(7 | (uint64_t{1} << 60)));
  // The sequence wraps within its field and never spills into the check or the rank.
  EXPECT_EQ(ucx::MessageTag(3, uint64_t{1} << ucx::kSequenceBits, 7), ucx::MessageTag(3, 0, 7));
  EXPECT_EQ(ucx::MessageTag(ucx::kMaxRanks - 1, ~uint64_t{0}, ~uint64_t{0}) & ucx::kNoticeBit, 0u);
  EXPECT_EQ(ucx::CheckOf(ucx::MessageTag(5, ~uint64_t{0}, 0)), 0u);
  // A closing notice never matches a message.
  EXPECT_NE(ucx::NoticeTag(3) & ucx::kMessageMask, ucx::MessageTag(3, 0, 0) & ucx::kMessageMask);
}

// Ranks as threads share this process's CPUs: the transport says they
// share cores exactly when they outnumber them (and then sleeps at once
// instead of driving a busy worker).
TEST(UcxTransportTest, SharesCoresWhenItsHostsRanksOutnumberTheCpus) {
  const size_t cpus = CpuCount(CurrentCpuMask());
  if (cpus > 16) GTEST_SKIP() << cpus << " CPUs: too many ranks as threads to outnumber them";
  for (int nranks : {2, static_cast<int>(cpus) + 1}) {
    if (nranks < 2) continue;
    auto transports = ConnectedMesh(nranks);
    ASSERT_EQ(transports.size(), static_cast<size_t>(nranks));
    for (const auto& transport : transports) {
      EXPECT_EQ(transport->capabilities().shares_cores, static_cast<size_t>(nranks) > cpus) << nranks << " ranks";
    }
    // Messages still flow either way.
    std::vector<Status> results(nranks);
    ForEachRank(nranks, [&](int rank) { results[rank] = ExchangeAllSizes(transports[rank].get(), rank, nranks); });
    for (const Status& status : results) EXPECT_TRUE(status.ok()) << status.message();
    DestroyTogether(&transports);
  }
}

TEST(UcxAddressTest, RoundTripsAndRejectsGarbage) {
  const unsigned char bytes[] = {0x00, 0x7f, 0xff, 0x10};
  CpuMask cpus;
  cpus.words[0] = 0x3;
  cpus.words[2] = 0x10;
  const std::string host = "node7/1234-abcd/net:[4026531840]";
  const std::string text = ucx::EncodeRankAddress(bytes, sizeof(bytes), cpus, host);
  EXPECT_EQ(text, "007fff10@3.0.10@node7/1234-abcd/net:[4026531840]");
  ucx::RankAddress decoded;
  ASSERT_TRUE(ucx::DecodeRankAddress(text, &decoded).ok());
  EXPECT_EQ(decoded.worker, std::vector<unsigned char>(bytes, bytes + sizeof(bytes)));
  for (size_t i = 0; i < kCpuMaskWords; ++i) EXPECT_EQ(decoded.cpus.words[i], cpus.words[i]) << i;
  EXPECT_EQ(decoded.host, host);
  for (const char* garbage : {"", "007fff10", "007fff10@3", "abc@3@h", "zz@3@h", "@3@h", "0011@x@h"}) {
    EXPECT_FALSE(ucx::DecodeRankAddress(garbage, &decoded).ok()) << garbage;
  }
}

TEST(UcxRegistryTest, IsSelectableAloneAndInLists) {
  const TransportRegistry& registry = BuiltinTransports();
  ASSERT_NE(registry.Find("ucx"), nullptr);
  std::vector<const TransportDescriptor*> order;
  ASSERT_TRUE(registry.ParseSelection("ucx", &order).ok());
  ASSERT_EQ(order.size(), 1u);
  EXPECT_STREQ(order[0]->name, "ucx");
  ASSERT_TRUE(registry.ParseSelection("shm,ucx", &order).ok());
  ASSERT_EQ(order.size(), 2u);
  EXPECT_STREQ(order[1]->name, "ucx");
  // auto leaves it out: it is created only where it is named.
  ASSERT_TRUE(registry.ParseSelection("auto", &order).ok());
  for (const TransportDescriptor* descriptor : order) EXPECT_STRNE(descriptor->name, "ucx");
}

TEST(UcxOptionsTest, BadVariablesFailWithTheirName) {
  TransportVars vars;
  vars.Set("CHORUS_UCX_TLS", "tcp;rm -rf");
  vars.Set("CHORUS_UCX_KEEPALIVE_MS", "1000");
  UcxOptions options;
  Status status = ReadUcxOptions(vars, &options);
  EXPECT_EQ(status.code(), chorusInvalidArgument);
  EXPECT_NE(status.message().find("CHORUS_UCX_TLS"), std::string::npos) << status.message();
  vars.Set("CHORUS_UCX_TLS", "posix,cma,tcp");
  vars.Set("CHORUS_UCX_KEEPALIVE_MS", "0");
  status = ReadUcxOptions(vars, &options);
  EXPECT_NE(status.message().find("CHORUS_UCX_KEEPALIVE_MS"), std::string::npos) << status.message();
  vars.Set("CHORUS_UCX_KEEPALIVE_MS", "250");
  ASSERT_TRUE(ReadUcxOptions(vars, &options).ok());
  EXPECT_EQ(options.tls, "posix,cma,tcp");
  EXPECT_EQ(options.keepalive_ms, 250);
}

TEST(UcxTransportTest, ThreadsExchangeSmallAndLargeMessages) {
  constexpr int kRanks = 3;
  auto transports = ConnectedMesh(kRanks);
  ASSERT_EQ(transports.size(), static_cast<size_t>(kRanks));
  std::vector<Status> results(kRanks);
  ForEachRank(kRanks, [&](int rank) { results[rank] = ExchangeAllSizes(transports[rank].get(), rank, kRanks); });
  for (const Status& status : results) EXPECT_TRUE(status.ok()) << status.message();
  DestroyTogether(&transports);
}

TEST(UcxTransportTest, ThreadsKeepPerPeerOrder) {
  auto transports = ConnectedMesh(2);
  ASSERT_EQ(transports.size(), 2u);
  std::vector<Status> results(2);
  ForEachRank(2, [&](int rank) { results[rank] = SendInOrder(transports[rank].get(), rank); });
  for (const Status& status : results) EXPECT_TRUE(status.ok()) << status.message();
  DestroyTogether(&transports);
}

// Rank 0 sends (tag, bytes); rank 1 expects (want_tag, want_bytes).
Status Mismatch(uint64_t tag, size_t bytes, uint64_t want_tag, size_t want_bytes) {
  auto transports = ConnectedMesh(2);
  if (transports.size() != 2) return InternalError("no mesh");
  std::vector<uint8_t> out(bytes, 1), in(want_bytes, 0);
  TransferRequest send, recv;
  send.buffer = out.data();
  send.bytes = bytes;
  send.tag = tag;
  recv.buffer = in.data();
  recv.bytes = want_bytes;
  recv.tag = want_tag;
  EXPECT_TRUE(transports[0]->endpoint(1)->PostSend(&send).ok());
  EXPECT_TRUE(transports[1]->endpoint(0)->PostRecv(&recv).ok());
  Status received;
  std::thread sender([&] { (void)WaitAll(transports[0].get(), {&send}, 3000); });
  received = WaitAll(transports[1].get(), {&recv});
  sender.join();
  DestroyTogether(&transports);
  return received;
}

TEST(UcxTransportTest, TagMismatchFailsNamingThePeer) {
  const Status status = Mismatch(5, 64, 6, 64);
  EXPECT_EQ(status.code(), chorusInternalError) << status.message();
  EXPECT_NE(status.message().find("mismatch with rank 0"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("expected tag 6"), std::string::npos) << status.message();
}

TEST(UcxTransportTest, LongerMessageFailsNamingThePeer) {
  const Status status = Mismatch(5, 1 << 20, 5, 1000);
  EXPECT_EQ(status.code(), chorusInternalError) << status.message();
  EXPECT_NE(status.message().find("mismatch with rank 0"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("got tag 5 with 1048576 bytes"), std::string::npos) << status.message();
}

TEST(UcxTransportTest, ShorterMessageFailsNamingThePeer) {
  const Status status = Mismatch(5, 10, 5, 100);
  EXPECT_EQ(status.code(), chorusInternalError) << status.message();
  EXPECT_NE(status.message().find("got tag 5 with 10 bytes"), std::string::npos) << status.message();
}

TEST(UcxTransportTest, ShutdownWakesASleepingProgressAndStaysFailed) {
  auto transports = ConnectedMesh(2);
  ASSERT_EQ(transports.size(), 2u);
  std::vector<uint8_t> in(100);
  TransferRequest recv;
  recv.buffer = in.data();
  recv.bytes = in.size();
  ASSERT_TRUE(transports[1]->endpoint(0)->PostRecv(&recv).ok());
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    transports[1]->Shutdown();
  });
  const Deadline deadline = Deadline::AfterMs(kTestTimeoutMs);
  Status status;
  while (status.ok() && !deadline.Expired()) status = transports[1]->Progress(kTestTimeoutMs);
  stopper.join();
  EXPECT_FALSE(status.ok());
  EXPECT_FALSE(recv.done);
  EXPECT_FALSE(transports[1]->Progress(0).ok());
}

TEST(UcxTransportTest, PeerClosingFailsOnlyWhatAwaitsIt) {
  auto transports = ConnectedMesh(3);
  ASSERT_EQ(transports.size(), 3u);
  std::vector<uint8_t> in(100);
  TransferRequest recv;
  recv.buffer = in.data();
  recv.bytes = in.size();
  ASSERT_TRUE(transports[0]->endpoint(2)->PostRecv(&recv).ok());
  // Rank 1 shuts down: rank 0 awaits nothing from it, so it goes on.
  std::thread closer([&] { transports[1]->Shutdown(); });
  const Deadline settle = Deadline::AfterMs(300);
  while (!settle.Expired()) ASSERT_TRUE(transports[0]->Progress(10).ok());
  closer.join();
  // Rank 2 shuts down while rank 0 awaits its message.
  transports[2]->Shutdown();
  const Status status = WaitAll(transports[0].get(), {&recv});
  EXPECT_EQ(status.code(), chorusRemoteError) << status.message();
  EXPECT_NE(status.message().find("rank 2 closed the connection"), std::string::npos) << status.message();
  EXPECT_FALSE(recv.done);
}

// ---- Ranks as processes ----------------------------------------------------
//
// The parent forks one child per rank and execs this binary in it with
// TEST_UCX_CHILD_ROLE set (the UcxChild test below runs the rank), and relays the
// ranks' addresses between them through pipes.

struct ChildRole {
  std::string scenario;
  int rank = 0, nranks = 0;
  int in_fd = -1, out_fd = -1;
  std::string tls;
};

bool WriteAll(int fd, const std::string& text) {
  const uint32_t length = static_cast<uint32_t>(text.size());
  return ::write(fd, &length, sizeof(length)) == sizeof(length) &&
         (length == 0 || ::write(fd, text.data(), length) == static_cast<ssize_t>(length));
}

bool ReadAll(int fd, std::string* text) {
  uint32_t length = 0;
  if (::read(fd, &length, sizeof(length)) != sizeof(length)) return false;
  text->assign(length, '\0');
  size_t got = 0;
  while (got < length) {
    const ssize_t n = ::read(fd, &(*text)[got], length - got);
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  return true;
}

// Runs `scenario` on `nranks` processes; `between` runs in the parent once
// every rank has reported "ready" after connecting (it gets the pids).
// Returns each child's exit status.
std::vector<int> RunProcesses(const std::string& scenario, int nranks, const std::string& tls,
                              const std::function<void(const std::vector<pid_t>&, const std::vector<int>&)>& between =
                                  nullptr) {
  std::vector<pid_t> pids;
  std::vector<int> to_child, from_child;
  for (int rank = 0; rank < nranks; ++rank) {
    int down[2], up[2];
    if (::pipe(down) != 0 || ::pipe(up) != 0) return {};
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(down[1]);
      ::close(up[0]);
      const std::string role = StrCat(scenario, ":", rank, ":", nranks, ":", down[0], ":", up[1], ":", tls);
      ::setenv("TEST_UCX_CHILD_ROLE", role.c_str(), 1);
      // UCX leaves its shared memory out of endpoints that report peer
      // failures unless told that it may (UCX_POSIX/SYSV_ERROR_HANDLING).
      if (tls.find("posix") != std::string::npos) ::setenv("UCX_POSIX_ERROR_HANDLING", "y", 1);
      if (tls.find("sysv") != std::string::npos) ::setenv("UCX_SYSV_ERROR_HANDLING", "y", 1);
      ::execl("/proc/self/exe", "ucx_transport_test", "--gtest_filter=UcxChild.Run", nullptr);
      ::_exit(127);
    }
    ::close(down[0]);
    ::close(up[1]);
    pids.push_back(pid);
    to_child.push_back(down[1]);
    from_child.push_back(up[0]);
  }
  std::vector<std::string> addresses(nranks);
  for (int rank = 0; rank < nranks; ++rank) EXPECT_TRUE(ReadAll(from_child[rank], &addresses[rank]));
  std::string all;
  for (const std::string& address : addresses) all += address + "\n";
  for (int rank = 0; rank < nranks; ++rank) EXPECT_TRUE(WriteAll(to_child[rank], all));
  if (between) between(pids, from_child);
  std::vector<int> statuses(nranks, -1);
  const Deadline deadline = Deadline::AfterMs(2 * kTestTimeoutMs);
  for (int rank = 0; rank < nranks; ++rank) {
    int status = 0;
    while (::waitpid(pids[rank], &status, WNOHANG) == 0) {
      if (deadline.Expired()) {
        ::kill(pids[rank], SIGKILL);
        ::waitpid(pids[rank], &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    statuses[rank] = status;
    ::close(to_child[rank]);
    ::close(from_child[rank]);
  }
  return statuses;
}

bool ExitedCleanly(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

// The transports the process tests run over: UCX's TCP and its shared memory.
class UcxProcessTest : public ::testing::TestWithParam<const char*> {};

TEST_P(UcxProcessTest, ExchangeSmallAndLargeMessages) {
  for (int status : RunProcesses("exchange", 3, GetParam())) EXPECT_TRUE(ExitedCleanly(status)) << status;
}

TEST_P(UcxProcessTest, KeepPerPeerOrder) {
  for (int status : RunProcesses("order", 2, GetParam())) EXPECT_TRUE(ExitedCleanly(status)) << status;
}

TEST_P(UcxProcessTest, KilledPeerFailsAPendingReceiveNamingIt) {
  const std::string tls = GetParam();
  if (tls.find("posix") != std::string::npos || tls.find("sysv") != std::string::npos) {
    // With their error handling on (RunProcesses), UCX 1.13 carries the
    // peer over shared memory and never reports its death: the deadline does.
    GTEST_SKIP() << "UCX 1.13 reports no dead peer over posix/sysv shared memory";
  }
  const std::vector<int> statuses =
      RunProcesses("killed", 2, GetParam(), [](const std::vector<pid_t>& pids, const std::vector<int>& from_child) {
        std::string ready;
        ASSERT_TRUE(ReadAll(from_child[0], &ready));  // rank 0 has posted its receive
        ASSERT_TRUE(ReadAll(from_child[1], &ready));
        ::kill(pids[1], SIGKILL);
      });
  ASSERT_EQ(statuses.size(), 2u);
  EXPECT_TRUE(ExitedCleanly(statuses[0])) << statuses[0];
  EXPECT_TRUE(WIFSIGNALED(statuses[1]));
}

INSTANTIATE_TEST_SUITE_P(Tls, UcxProcessTest, ::testing::Values("", "tcp", "posix,cma", "sysv,cma", "posix,cma,tcp"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string name = *info.param != '\0' ? info.param : "all";
                           for (char& c : name) c = (c == ',') ? '_' : c;
                           return name;
                         });

// One rank of a process test (only in a child that RunProcesses started).
TEST(UcxChild, Run) {
  const char* role_text = std::getenv("TEST_UCX_CHILD_ROLE");
  if (role_text == nullptr) GTEST_SKIP() << "runs only as a child of the process tests";
  ChildRole role;
  std::vector<std::string> fields;
  std::string text = role_text;
  for (size_t begin = 0;;) {
    const size_t colon = text.find(':', begin);
    fields.push_back(text.substr(begin, colon == std::string::npos ? std::string::npos : colon - begin));
    if (colon == std::string::npos) break;
    begin = colon + 1;
  }
  ASSERT_EQ(fields.size(), 6u) << role_text;
  role.scenario = fields[0];
  role.rank = std::atoi(fields[1].c_str());
  role.nranks = std::atoi(fields[2].c_str());
  role.in_fd = std::atoi(fields[3].c_str());
  role.out_fd = std::atoi(fields[4].c_str());
  role.tls = fields[5];

  std::unique_ptr<Transport> transport;
  Status status = CreateUcxTransport(Options(role.rank, role.nranks, role.tls), &transport);
  ASSERT_TRUE(status.ok()) << status.message();
  ASSERT_TRUE(WriteAll(role.out_fd, transport->LocalAddress()));
  std::string all;
  ASSERT_TRUE(ReadAll(role.in_fd, &all));
  std::vector<std::string> addresses;
  for (size_t begin = 0, end; (end = all.find('\n', begin)) != std::string::npos; begin = end + 1) {
    addresses.push_back(all.substr(begin, end - begin));
  }
  status = transport->Connect(addresses, Deadline::AfterMs(kTestTimeoutMs));
  ASSERT_TRUE(status.ok()) << status.message();
  if (role.scenario == "exchange") {
    status = ExchangeAllSizes(transport.get(), role.rank, role.nranks);
    EXPECT_TRUE(status.ok()) << status.message();
  } else if (role.scenario == "order") {
    status = SendInOrder(transport.get(), role.rank);
    EXPECT_TRUE(status.ok()) << status.message();
  } else if (role.scenario == "killed") {
    if (role.rank == 1) {
      ASSERT_TRUE(WriteAll(role.out_fd, "ready"));
      while (true) (void)transport->Progress(100);  // until killed
    }
    std::vector<uint8_t> in(1 << 20);
    TransferRequest recv;
    recv.buffer = in.data();
    recv.bytes = in.size();
    ASSERT_TRUE(transport->endpoint(1)->PostRecv(&recv).ok());
    ASSERT_TRUE(WriteAll(role.out_fd, "ready"));
    status = WaitAll(transport.get(), {&recv});
    EXPECT_EQ(status.code(), chorusRemoteError) << status.message();
    EXPECT_NE(status.message().find("rank 1"), std::string::npos) << status.message();
    EXPECT_FALSE(recv.done);
  }
}

#else  // !CHORUS_HAVE_UCX

TEST(UcxTransportTest, NeedsUcx) { GTEST_SKIP() << "Chorus was built without UCX (libucx-dev)"; }

#endif

}  // namespace
}  // namespace chorus
