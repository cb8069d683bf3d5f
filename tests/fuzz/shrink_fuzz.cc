// The shrink messages: the root's table and a membership as a rank decodes
// them, a join request as a listener checks it (CheckRequest) and a reply
// header and body as an asker reads it (ReadReply), the last two over a
// socket pair fed with the input.
#include <sys/socket.h>
#include <unistd.h>

#include <fuzzer/FuzzedDataProvider.h>

#include <string>
#include <vector>

#include "bootstrap/shrink_protocol.h"
#include "fuzz_check.h"

namespace chorus {
namespace {

constexpr int kDeadlineMs = 1000;

void CheckMembership(const std::vector<int>& ranks, int old_nranks) {
  FUZZ_CHECK(!ranks.empty() && ranks.size() <= static_cast<size_t>(old_nranks));
  for (size_t i = 0; i < ranks.size(); ++i) {
    FUZZ_CHECK(ranks[i] >= 0 && ranks[i] < old_nranks);
    if (i > 0) FUZZ_CHECK(ranks[i - 1] < ranks[i]);
  }
}

bool SocketPair(Socket* a, Socket* b) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0) return false;
  *a = Socket(fds[0], "fuzz peer");
  *b = Socket(fds[1], "fuzz asker");
  return true;
}

}  // namespace
}  // namespace chorus

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chorus;
  using namespace chorus::shrink;
  FuzzedDataProvider input(data, size);
  const int old_nranks = input.ConsumeIntegralInRange<int>(1, 64);
  const int own_rank = input.ConsumeIntegralInRange<int>(0, old_nranks - 1);
  const int hello_rank = input.ConsumeIntegral<int32_t>();
  const std::string body = input.ConsumeRemainingBytesAsString();

  Table table;
  if (DecodeTable(body, old_nranks, &table).ok()) {
    CheckMembership(table.survivors, old_nranks);
    FUZZ_CHECK(!table.root_address.empty());
    FUZZ_CHECK(EncodeTable(table) == body);
  }
  std::vector<int> ranks;
  if (DecodeRanks(body, old_nranks, &ranks).ok()) {
    CheckMembership(ranks, old_nranks);
    FUZZ_CHECK(EncodeRanks(ranks) == body);
  }

  // A listener checking an admitted request (framed to kJoinBytes, or cut
  // short); a refusal is answered on the socket.
  RecoveryEndpoint endpoint;
  endpoint.rank = own_rank;
  endpoint.nranks = old_nranks;
  {
    Socket listener_side, asker_side;
    if (!SocketPair(&listener_side, &asker_side)) return 0;
    AdmittedConnection connection;
    connection.socket = std::move(listener_side);
    connection.hello.rank = hello_rank;
    connection.request = body.substr(0, kJoinBytes);
    int asker = -1;
    if (CheckRequest(endpoint, connection, Deadline::AfterMs(kDeadlineMs), &asker).ok()) {
      FUZZ_CHECK(asker >= 0 && asker < old_nranks && asker != own_rank && asker == hello_rank);
    }
  }
  // An asker reading the bytes as a reply.
  {
    Socket reader, writer;
    if (!SocketPair(&reader, &writer)) return 0;
    const size_t sent = body.size() < 64 * 1024 ? body.size() : 64 * 1024;
    if (::send(writer.fd(), body.data(), sent, MSG_NOSIGNAL) != static_cast<ssize_t>(sent)) return 0;
    writer = Socket();  // EOF after the bytes
    Reply reply;
    if (ReadReply(reader, Deadline::AfterMs(kDeadlineMs), &reply).ok()) {
      FUZZ_CHECK(reply.body.size() + kReplyHeaderBytes <= sent);
      FUZZ_CHECK(reply.body.size() <= kMaxBodyBytes);
    }
  }
  return 0;
}
