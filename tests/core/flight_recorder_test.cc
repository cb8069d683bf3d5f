// FlightRecorder (core/flight_recorder.h): the ring keeps the last N
// operations in order, states and times advance, failures keep what they
// waited for, dumps are JSON lines, bad paths write nothing, and recording
// allocates nothing.
#include "core/flight_recorder.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "tests/core/allocation_counter.h"

namespace chorus {
namespace {

Operation AllReduce(size_t count) {
  Operation op;
  op.args.coll = Collective::kAllReduce;
  op.args.count = count;
  op.args.dtype = chorusFloat32;
  op.args.op = ReduceOp::kSum;
  return op;
}

std::string TempPath(const char* name) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/chorus_fr_" + std::to_string(getpid()) + "_" + name;
}

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The integer after "key": in a JSON line.
long long Field(const std::string& line, const std::string& key) {
  const size_t at = line.find("\"" + key + "\":");
  if (at == std::string::npos) return -1;
  return std::stoll(line.substr(at + key.size() + 3));
}

bool Has(const std::string& line, const std::string& text) { return line.find(text) != std::string::npos; }

TraceIdentity Identity() {
  TraceIdentity identity;
  identity.rank = 2;
  identity.nranks = 3;
  identity.comm_hash = 0xabcdef;
  return identity;
}

TEST(FlightRecorderTest, RingKeepsTheLastNInOrder) {
  FlightRecorder recorder(Identity(), 4, "");
  for (size_t i = 1; i <= 10; ++i) {
    Operation op = AllReduce(i);
    recorder.BeginLaunch(&op, 1);
    recorder.MarkStarted(true);
    recorder.EndLaunch(Status::Ok(), nullptr);
  }
  const std::string path = TempPath("ring.jsonl");
  ASSERT_TRUE(recorder.Dump(path, "api", 0).ok());
  const std::vector<std::string> lines = Lines(path);
  std::remove(path.c_str());
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_TRUE(Has(lines[0], "{\"chorus_trace\":1,\"rank\":2,\"nranks\":3,\"host\":\"")) << lines[0];
  EXPECT_TRUE(Has(lines[0], "\"comm\":\"0000000000abcdef\",\"reason\":\"api\"")) << lines[0];
  EXPECT_EQ(Field(lines[0], "recorded"), 10);
  EXPECT_EQ(Field(lines[0], "capacity"), 4);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(Field(lines[1 + i], "seq"), 7 + i) << lines[1 + i];
    EXPECT_EQ(Field(lines[1 + i], "count"), 7 + i) << lines[1 + i];
    EXPECT_TRUE(Has(lines[1 + i], "\"call\":\"AllReduce\"")) << lines[1 + i];
    EXPECT_TRUE(Has(lines[1 + i], "\"dtype\":\"float32\",\"op\":\"sum\",\"root\":-1")) << lines[1 + i];
    EXPECT_TRUE(Has(lines[1 + i], "\"state\":\"done\"")) << lines[1 + i];
  }
}

TEST(FlightRecorderTest, StatesAndTimestampsAdvance) {
  FlightRecorder recorder(Identity(), 8, "");
  const std::string path = TempPath("states.jsonl");
  Operation ops[2] = {AllReduce(16), Operation()};
  ops[1].kind = Operation::Kind::kSend;
  ops[1].peer = 1;
  ops[1].bytes = 64;
  ops[1].dtype = chorusInt32;
  recorder.BeginLaunch(ops, 2);
  recorder.SetPath(0, "ring");
  ASSERT_TRUE(recorder.Dump(path, "api", 3).ok());
  std::vector<std::string> lines = Lines(path);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(Field(lines[0], "waiting_turn"), 3);
  EXPECT_TRUE(Has(lines[1], "\"path\":\"ring\",\"state\":\"queued\"")) << lines[1];
  EXPECT_TRUE(Has(lines[2], "\"seq\":1,\"kind\":\"send\",\"call\":\"Send\",\"count\":16,\"dtype\":\"int32\",\"peer\":1"))
      << lines[2];
  const long long enqueued = Field(lines[1], "enqueued_ns");
  EXPECT_GT(enqueued, 0);
  EXPECT_EQ(Field(lines[1], "started_ns"), 0);

  recorder.MarkStarted(true);
  ASSERT_TRUE(recorder.Dump(path, "api", 0).ok());
  lines = Lines(path);
  EXPECT_TRUE(Has(lines[1], "\"state\":\"running\"")) << lines[1];
  const long long started = Field(lines[1], "started_ns");
  EXPECT_GE(started, enqueued);
  EXPECT_EQ(Field(lines[1], "finished_ns"), 0);
  EXPECT_LE(started, Field(lines[0], "steady_anchor_ns"));

  WaitingPeers waiting;
  waiting.AddRecv(2);
  waiting.AddSend(0);
  recorder.EndLaunch(TimeoutError("rank 1: timed out waiting for data from peer 2"), &waiting);
  ASSERT_TRUE(recorder.Dump(path, "timeout", 0).ok());
  lines = Lines(path);
  std::remove(path.c_str());
  for (int i = 1; i <= 2; ++i) {
    EXPECT_TRUE(Has(lines[i], "\"state\":\"failed\"")) << lines[i];
    EXPECT_GE(Field(lines[i], "finished_ns"), started);
    EXPECT_TRUE(Has(lines[i], "\"waiting_for_data_from\":[2],\"waiting_for_peer_to_take\":[0]")) << lines[i];
    EXPECT_TRUE(Has(lines[i], "\"error\":\"rank 1: timed out waiting for data from peer 2\"")) << lines[i];
  }
  EXPECT_TRUE(Has(lines[0], "\"reason\":\"timeout\""));
}

TEST(FlightRecorderTest, BadPathIsAClearErrorAndWritesNothing) {
  FlightRecorder recorder(Identity(), 4, "");
  Status status = recorder.Dump("/nonexistent-chorus-dir/trace.jsonl", "api", 0);
  EXPECT_EQ(status.code(), chorusInvalidArgument);
  EXPECT_NE(status.message().find("'/nonexistent-chorus-dir/trace.jsonl'"), std::string::npos) << status.message();
  EXPECT_EQ(recorder.Dump("", "api", 0).code(), chorusInvalidArgument);
}

TEST(FlightRecorderTest, PatternNamesHostPidAndRank) {
  FlightRecorder recorder(Identity(), 4, "/tmp/t.%h.%p.%r.%%.jsonl");
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  EXPECT_EQ(recorder.ExpandPattern(recorder.file_pattern()),
            std::string("/tmp/t.") + host + "." + std::to_string(getpid()) + ".2.%.jsonl");
}

TEST(FlightRecorderTest, RecordingAllocatesNothing) {
  FlightRecorder recorder(Identity(), 4, "");
  Operation op = AllReduce(8);
  WaitingPeers waiting;
  waiting.AddRecv(1);
  const Status failure = TimeoutError("timed out");
  const Status ok = Status::Ok();
  testing::ResetThreadAllocations();
  for (int i = 0; i < 100; ++i) {
    recorder.BeginLaunch(&op, 1);
    recorder.SetPath(0, "board-oneshot");
    recorder.MarkStarted(true);
    recorder.EndLaunch(i % 10 == 0 ? failure : ok, &waiting);
  }
  EXPECT_EQ(testing::ThreadAllocations(), 0);
}

}  // namespace
}  // namespace chorus
