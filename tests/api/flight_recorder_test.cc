// The flight recorder through the C API: a 3-rank job in which rank 2 skips
// a collective times out quickly, every survivor's dump names rank 2, and
// chorus_trace's verdict on the dumps is exact; chorusCommDumpTrace errors;
// SIGUSR1 dumps. CHORUS_TRACE_FILE is set before any communicator exists.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/api/harness.h"

namespace {

using chorus_test::MakeConfig;
using chorus_test::ThreadComms;

std::string TraceDir() {
  static const std::string dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string path = std::string(tmp != nullptr ? tmp : "/tmp") + "/chorus_fr_api_" + std::to_string(getpid());
    mkdir(path.c_str(), 0700);
    return path;
  }();
  return dir;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

// Runs `command` and returns its standard output.
std::string Output(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char buffer[512];
  while (fgets(buffer, sizeof(buffer), pipe) != nullptr) out += buffer;
  pclose(pipe);
  return out;
}

class FlightRecorderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    setenv("CHORUS_TRACE_FILE", (TraceDir() + "/trace.%r.jsonl").c_str(), 1);
    setenv("CHORUS_TUNER", "static", 1);  // no calibration: creation stays short
  }
  static void TearDownTestSuite() {
    for (const char* name : {"trace.0.jsonl", "trace.1.jsonl", "trace.2.jsonl"}) {
      std::remove((TraceDir() + "/" + name).c_str());
    }
    rmdir(TraceDir().c_str());
  }
};

TEST_F(FlightRecorderTest, SkippedCollectiveTimesOutAndEveryDumpNamesTheMissingRank) {
  for (int r = 0; r < 3; ++r) std::remove((TraceDir() + "/trace." + std::to_string(r) + ".jsonl").c_str());
  chorusConfig_t config = MakeConfig("direct", 1500);
  ThreadComms comms = ThreadComms::InitRank(3, &config);
  ASSERT_TRUE(comms.ok()) << comms.error();
  std::vector<chorusResult_t> results(3, chorusSuccess);
  comms.Run([&](int rank, chorusComm_t comm) {
    std::vector<float> data(256, 1.0f);
    for (int call = 1; call <= 3; ++call) {
      ASSERT_EQ(chorusAllReduce(data.data(), data.data(), data.size(), chorusFloat32, chorusSum, comm, nullptr),
                chorusSuccess);
    }
    if (rank == 2) return;  // never enters AllReduce #4
    results[rank] = chorusAllReduce(data.data(), data.data(), data.size(), chorusFloat32, chorusSum, comm, nullptr);
  });
  EXPECT_EQ(results[0], chorusTimeout) << chorusGetLastError(comms[0]);
  // Rank 1 times out too, or sees rank 0 shut down first.
  EXPECT_TRUE(results[1] == chorusTimeout || results[1] == chorusRemoteError) << chorusGetLastError(comms[1]);
  ASSERT_EQ(chorusCommDumpTrace(comms[2], nullptr), chorusSuccess) << chorusGetLastError(comms[2]);

  std::string files;
  for (int r = 0; r < 3; ++r) {
    const std::string path = TraceDir() + "/trace." + std::to_string(r) + ".jsonl";
    ASSERT_TRUE(Exists(path)) << path;
    files += " " + path;
    const std::string text = ReadFile(path);
    EXPECT_NE(text.find("{\"chorus_trace\":1,\"rank\":" + std::to_string(r) + ",\"nranks\":3,"), std::string::npos);
    if (r == 2) {
      EXPECT_NE(text.find("\"reason\":\"api\""), std::string::npos) << text;
      EXPECT_EQ(text.find("\"seq\":4"), std::string::npos) << text;
      continue;
    }
    const size_t entry = text.find("{\"seq\":4,\"kind\":\"coll\",\"call\":\"AllReduce\"");
    ASSERT_NE(entry, std::string::npos) << text;
    const std::string line = text.substr(entry, text.find('\n', entry) - entry);
    EXPECT_NE(line.find("\"state\":\"failed\""), std::string::npos) << line;
    const size_t from = line.find("\"waiting_for_data_from\":[");
    ASSERT_NE(from, std::string::npos) << line;
    const std::string peers = line.substr(from, line.find(']', from) - from);
    EXPECT_NE(peers.find('2'), std::string::npos) << line;
  }
  const std::string verdict = Output("/usr/bin/python3 " CHORUS_TRACE_TOOL " --verdict-only" + files);
  EXPECT_EQ(verdict, "verdict: rank 2 never entered AllReduce #4; ranks 0,1 wait in it for data from peer 2\n");
  const std::string report = Output("/usr/bin/python3 " CHORUS_TRACE_TOOL + files);
  EXPECT_NE(report.find("behind: rank 2 by 1 call(s) (last started #3, others reached #4)"), std::string::npos)
      << report;
  EXPECT_NE(report.find("stuck: rank 0 in AllReduce #4 AllReduce(count=256, float32, sum)"), std::string::npos)
      << report;
  EXPECT_NE(report.find("rank 2 ("), std::string::npos) << report;
  EXPECT_NE(report.find("last completed #3, last started #3"), std::string::npos) << report;
}

// Hand-written dumps of a job whose rank 1 called Broadcast where the
// others called AllReduce as #2: the tool reports the mismatch.
TEST_F(FlightRecorderTest, ToolReportsShapeMismatches) {
  const std::string header =
      "\"nranks\":2,\"host\":\"h\",\"pid\":1,\"comm\":\"00000000000000aa\",\"reason\":\"api\","
      "\"wall_anchor_us\":1000000,\"steady_anchor_ns\":5000000000,\"capacity\":256,\"recorded\":2,"
      "\"waiting_turn\":0}\n";
  const std::string first =
      "{\"seq\":1,\"kind\":\"coll\",\"call\":\"AllReduce\",\"count\":8,\"dtype\":\"float32\",\"op\":\"sum\","
      "\"root\":-1,\"path\":\"ring\",\"state\":\"done\",\"enqueued_ns\":1,\"started_ns\":1,\"finished_ns\":2}\n";
  const std::string paths[2] = {TraceDir() + "/mismatch.0.jsonl", TraceDir() + "/mismatch.1.jsonl"};
  std::ofstream(paths[0]) << "{\"chorus_trace\":1,\"rank\":0," << header << first
                          << "{\"seq\":2,\"kind\":\"coll\",\"call\":\"AllReduce\",\"count\":8,\"dtype\":\"float32\","
                             "\"op\":\"sum\",\"root\":-1,\"path\":\"ring\",\"state\":\"running\",\"enqueued_ns\":3,"
                             "\"started_ns\":3,\"finished_ns\":0}\n";
  std::ofstream(paths[1]) << "{\"chorus_trace\":1,\"rank\":1," << header << first
                          << "{\"seq\":2,\"kind\":\"coll\",\"call\":\"Broadcast\",\"count\":8,\"dtype\":\"float32\","
                             "\"op\":\"sum\",\"root\":0,\"path\":\"ring\",\"state\":\"running\",\"enqueued_ns\":3,"
                             "\"started_ns\":3,\"finished_ns\":0}\n";
  const std::string report = Output("/usr/bin/python3 " CHORUS_TRACE_TOOL " " + paths[0] + " " + paths[1]);
  std::remove(paths[0].c_str());
  std::remove(paths[1].c_str());
  EXPECT_NE(report.find("mismatch at #2: rank 0 called AllReduce(count=8, float32, sum); rank 1 called "
                        "Broadcast(count=8, float32, root 0)\n"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("verdict: ranks disagree on call #2: rank 0 called AllReduce(count=8, float32, sum); rank 1 "
                        "called Broadcast(count=8, float32, root 0)\n"),
            std::string::npos)
      << report;
}

TEST_F(FlightRecorderTest, DumpTraceErrors) {
  ThreadComms comms = ThreadComms::InitRank(1);
  ASSERT_TRUE(comms.ok()) << comms.error();
  EXPECT_EQ(chorusCommDumpTrace(comms[0], "/nonexistent-chorus-dir/x.jsonl"), chorusInvalidArgument);
  EXPECT_NE(std::string(chorusGetLastError(comms[0])).find("cannot open trace file '/nonexistent-chorus-dir/x.jsonl'"),
            std::string::npos)
      << chorusGetLastError(comms[0]);
  EXPECT_EQ(chorusCommDumpTrace(nullptr, "/tmp/x"), chorusInvalidArgument);
}

TEST_F(FlightRecorderTest, TraceBufferZeroTurnsItOff) {
  setenv("CHORUS_TRACE_BUFFER", "0", 1);
  ThreadComms comms = ThreadComms::InitRank(1);
  unsetenv("CHORUS_TRACE_BUFFER");
  ASSERT_TRUE(comms.ok()) << comms.error();
  EXPECT_EQ(chorusCommDumpTrace(comms[0], (TraceDir() + "/off.jsonl").c_str()), chorusInvalidUsage);
  EXPECT_NE(std::string(chorusGetLastError(comms[0])).find("CHORUS_TRACE_BUFFER=0"), std::string::npos);
  EXPECT_FALSE(Exists(TraceDir() + "/off.jsonl"));
}

TEST_F(FlightRecorderTest, SigUsr1Dumps) {
  const std::string path = TraceDir() + "/trace.0.jsonl";
  std::remove(path.c_str());
  ThreadComms comms = ThreadComms::InitRank(1);
  ASSERT_TRUE(comms.ok()) << comms.error();
  int value = 7;
  ASSERT_EQ(chorusAllReduce(&value, &value, 1, chorusInt32, chorusSum, comms[0], nullptr), chorusSuccess);
  ASSERT_EQ(kill(getpid(), SIGUSR1), 0);
  // The dump thread writes it; bounded wait.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  std::string text;
  while (std::chrono::steady_clock::now() < deadline) {
    text = ReadFile(path);
    if (text.find("\"seq\":1,") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_NE(text.find("\"reason\":\"signal\""), std::string::npos) << text;
  EXPECT_NE(text.find("{\"seq\":1,\"kind\":\"coll\",\"call\":\"AllReduce\",\"count\":1,\"dtype\":\"int32\""),
            std::string::npos)
      << text;
}

}  // namespace
