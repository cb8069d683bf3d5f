#include "collective_case.h"

#include <cstring>
#include <sstream>
#include <vector>

#include "algorithms/topology.h"
#include "reference_reduce.h"
#include "schedule_checker.h"

namespace chorus::testing {

namespace {

bool IsGatherLayout(Collective coll) { return coll == Collective::kAllGather || coll == Collective::kGather; }
bool IsScatterLayout(Collective coll) { return coll == Collective::kReduceScatter || coll == Collective::kScatter; }

// Small integers (exact in every dtype and under every op we test), varied
// by rank and index, some negative.
void FillInput(DataType dtype, int rank, size_t count, uint8_t* out) {
  const size_t es = DataTypeSize(dtype);
  for (size_t i = 0; i < count; ++i) {
    int64_t v = 1 + static_cast<int64_t>((rank * 7 + i * 13) % 5);
    if ((rank + 2 * i) % 3 == 0) v = -v;
    uint8_t* dst = out + i * es;
    switch (dtype) {
      case chorusFloat32: {
        const float f = static_cast<float>(v);
        std::memcpy(dst, &f, es);
        break;
      }
      case chorusFloat64: {
        const double d = static_cast<double>(v);
        std::memcpy(dst, &d, es);
        break;
      }
      default: {
        const uint64_t bits = static_cast<uint64_t>(v);  // two's complement, little endian
        std::memcpy(dst, &bits, es);
        break;
      }
    }
  }
}

struct RankBuffers {
  std::vector<uint8_t> user;  // in place: the one allocation
  std::vector<uint8_t> send;
  std::vector<uint8_t> recv;
};

}  // namespace

std::string DescribeCase(const CollectiveCase& c) {
  std::ostringstream out;
  out << CollectiveName(c.coll) << "/" << AlgorithmName(c.algo) << " nranks=" << c.nranks << " count=" << c.count
      << " root=" << c.root << (c.in_place ? " in-place" : " out-of-place") << " " << DataTypeName(c.dtype) << " "
      << ReduceOpName(c.op) << " segment=" << c.segment_bytes << " servers=" << c.server_count
      << (c.host_of_rank.empty() ? "" : " hosts=");
  for (size_t r = 0; r < c.host_of_rank.size(); ++r) out << (r ? "," : "") << c.host_of_rank[r];
  out << " chunk=" << c.run.chunk_bytes << (c.run.rendezvous ? " rendezvous" : " eager") << " seed=" << c.run.seed;
  return out.str();
}

std::string RunCollectiveCase(const CollectiveCase& c) {
  const int p = c.nranks;
  const size_t es = DataTypeSize(c.dtype);
  const size_t block = c.count * es;
  std::vector<Schedule> schedules(p);
  std::vector<RankBuffers> buffers(p);
  std::vector<RankMemory> memory(p);
  std::vector<std::vector<uint8_t>> inputs(p);
  const bool rooted_send = c.coll == Collective::kBroadcast || c.coll == Collective::kScatter;
  const bool rooted_recv = c.coll == Collective::kReduce || c.coll == Collective::kGather;
  const Topology topology{c.host_of_rank, c.group_of_rank};

  for (int r = 0; r < p; ++r) {
    CollectiveArgs args;
    args.coll = c.coll;
    args.count = c.count;
    args.dtype = c.dtype;
    args.op = c.op;
    args.root = c.root;
    args.nranks = p;
    args.rank = r;
    args.in_place = c.in_place;
    args.segment_bytes = c.segment_bytes;
    args.server_count = c.server_count;
    if (!c.host_of_rank.empty()) args.topology = &topology;
    Status status = BuildSchedule(args, c.algo, &schedules[r]);
    if (!status.ok()) return "rank " + std::to_string(r) + ": " + status.message();

    const size_t send_bytes = SendBufferBytes(args);
    const size_t recv_bytes = RecvBufferBytes(args);
    RankBuffers& b = buffers[r];
    RankMemory& m = memory[r];
    if (c.in_place) {
      b.user.assign(std::max(send_bytes, recv_bytes), 0xAB);
      m.send = m.recv = b.user.data();
      m.send_bytes = send_bytes;
      m.recv_bytes = recv_bytes;
      if (IsGatherLayout(c.coll)) m.send += r * block;
      if (IsScatterLayout(c.coll)) m.recv += r * block;
    } else {
      b.send.assign(send_bytes, 0xAB);
      b.recv.assign(recv_bytes, 0xAB);
      const bool unbound_send = rooted_send && r != c.root;
      const bool unbound_recv = rooted_recv && r != c.root;
      if (!unbound_send) {
        m.send = b.send.data();
        m.send_bytes = send_bytes;
      }
      if (!unbound_recv) {
        m.recv = b.recv.data();
        m.recv_bytes = recv_bytes;
      }
    }
    inputs[r].resize(send_bytes);
    FillInput(c.dtype, r, send_bytes / es, inputs[r].data());
    if (m.send) std::memcpy(m.send, inputs[r].data(), send_bytes);
  }
  // What must not change: out of place the whole send buffer; in place with
  // the scatter layout, the user buffer outside our block.
  std::vector<std::vector<uint8_t>> untouched(p);
  for (int r = 0; r < p; ++r) untouched[r] = c.in_place ? buffers[r].user : buffers[r].send;

  const std::string context = DescribeCase(c) + ": ";
  std::string error = CheckSchedules(schedules, memory);
  if (!error.empty()) return context + error;
  error = RunVirtualRanks(schedules, memory, c.run);
  if (!error.empty()) return context + error;

  auto reduced = [&](size_t offset, size_t bytes) {
    std::vector<uint8_t> acc(inputs[0].begin() + offset, inputs[0].begin() + offset + bytes);
    for (int j = 1; j < p; ++j) {
      ReferenceReduce(acc.data(), acc.data(), inputs[j].data() + offset, bytes / es, c.dtype, c.op);
    }
    return acc;
  };
  auto slice = [&](int rank, size_t offset) {
    return std::vector<uint8_t>(inputs[rank].begin() + offset, inputs[rank].begin() + offset + block);
  };
  for (int r = 0; r < p; ++r) {
    std::vector<uint8_t> expected;
    switch (c.coll) {
      case Collective::kAllReduce:
        expected = reduced(0, block);
        break;
      case Collective::kBroadcast:
        expected = slice(c.root, 0);
        break;
      case Collective::kReduce:
        if (r == c.root) expected = reduced(0, block);
        break;
      case Collective::kReduceScatter:
        expected = reduced(r * block, block);
        break;
      case Collective::kScatter:
        expected = slice(c.root, r * block);
        break;
      case Collective::kAllGather:
      case Collective::kGather:
        if (c.coll == Collective::kGather && r != c.root) break;
        for (int j = 0; j < p; ++j) {
          const auto part = slice(j, 0);
          expected.insert(expected.end(), part.begin(), part.end());
        }
        break;
      case Collective::kAllToAll:
        for (int j = 0; j < p; ++j) {
          const auto part = slice(j, r * block);
          expected.insert(expected.end(), part.begin(), part.end());
        }
        break;
      default:
        break;
    }
    const RankMemory& m = memory[r];
    if (!expected.empty() && std::memcmp(m.recv, expected.data(), expected.size()) != 0) {
      size_t at = 0;
      while (m.recv[at] == expected[at]) ++at;
      std::ostringstream out;
      out << context << "rank " << r << " result differs at byte " << at << " (element " << at / es << "): got "
          << int{m.recv[at]} << ", expected " << int{expected[at]} << "\n"
          << DescribeSchedule(schedules[r]);
      return out.str();
    }
    // The parts of the user memory the call must leave alone.
    const std::vector<uint8_t>& now = c.in_place ? buffers[r].user : buffers[r].send;
    for (size_t i = 0; i < now.size(); ++i) {
      const bool in_result = c.in_place && now.data() + i >= m.recv && now.data() + i < m.recv + m.recv_bytes;
      if (!in_result && now[i] != untouched[r][i]) {
        return context + "rank " + std::to_string(r) + " modified its send buffer at byte " + std::to_string(i) + "\n" +
               DescribeSchedule(schedules[r]);
      }
    }
  }
  return "";
}

}  // namespace chorus::testing
