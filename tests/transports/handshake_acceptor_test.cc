// HandshakeAcceptor over loopback: a member is admitted at once beside
// silent, trickling and junk strangers; strangers are dropped when their
// budget is spent or newer ones from the same source push them out; the
// handshake and request are read incrementally and never past the request.
#include "transports/socket/handshake_acceptor.h"

#include <poll.h>
#include <sys/socket.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/transports/intruders.h"

namespace chorus {
namespace {

using Clock = std::chrono::steady_clock;
using chorus_test::Intruders;

constexpr int kTimeoutMs = 10000;
const uint8_t kSecret[kSecretBytes] = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6};

struct Listening {
  Socket listener;
  std::string address;
};

Listening Listen() {
  Listening result;
  SocketAddress any;
  EXPECT_TRUE(ParseSocketAddress("127.0.0.1:0", &any).ok());
  EXPECT_TRUE(Socket::Listen(any, &result.listener).ok());
  SocketAddress bound;
  EXPECT_TRUE(result.listener.LocalAddress(&bound).ok());
  result.address = bound.ToString();
  return result;
}

// Requests of these tests: a length byte, then that many bytes.
Status FrameLengthPrefixed(const std::string& received, size_t* more) {
  if (received.empty()) {
    *more = 1;
    return Status::Ok();
  }
  if (received[0] == '!') return InvalidUsage("malformed test request");
  *more = 1 + static_cast<uint8_t>(received[0]) - received.size();
  return Status::Ok();
}

struct Drops {
  std::vector<Status> statuses;
  std::function<void(const Status&)> Recorder() {
    return [this](const Status& why) { statuses.push_back(why); };
  }
};

AcceptorOptions Options(Drops* drops) {
  AcceptorOptions options;
  options.purpose = ConnectionPurpose::kRendezvous;
  options.where = "test listener";
  options.framing = FrameLengthPrefixed;
  options.on_drop = drops->Recorder();
  return options;
}

// A member: connects, authenticates as `rank` and sends `request` (plus
// `extra`, which the acceptor must leave unread), from a thread.
std::thread Member(const std::string& address, int rank, std::string request, std::string extra = "",
                   Status* result = nullptr) {
  return std::thread([=] {
    SocketAddress target;
    Status status = ParseSocketAddress(address, &target);
    Socket socket;
    if (status.ok()) status = Socket::Connect(target, Deadline::AfterMs(kTimeoutMs), &socket);
    Hello hello;
    hello.purpose = ConnectionPurpose::kRendezvous;
    hello.rank = rank;
    if (status.ok()) status = ConnectHandshake(socket, kSecret, hello, Deadline::AfterMs(kTimeoutMs));
    const std::string bytes = request + extra;
    if (status.ok()) status = socket.SendAll(bytes.data(), bytes.size(), Deadline::AfterMs(kTimeoutMs));
    // Stay connected until the acceptor is done with us.
    char ignored;
    if (status.ok()) socket.RecvAll(&ignored, 1, Deadline::AfterMs(kTimeoutMs)).IgnoreError();
    if (result != nullptr) *result = status;
  });
}

// Runs the acceptor until `count` connections are admitted or `ms` pass.
std::vector<AdmittedConnection> AdmitFor(HandshakeAcceptor& acceptor, size_t count, int ms) {
  std::vector<AdmittedConnection> admitted;
  const Deadline deadline = Deadline::AfterMs(ms);
  while (admitted.size() < count && !deadline.Expired()) {
    EXPECT_TRUE(acceptor.Admit(deadline, &admitted).ok());
  }
  return admitted;
}

// True when the peer closed `fd` (after whatever it had sent).
bool ClosedByPeer(int fd) {
  char buffer[64];
  const Deadline deadline = Deadline::AfterMs(kTimeoutMs);
  while (!deadline.Expired()) {
    pollfd entry = {fd, POLLIN, 0};
    if (::poll(&entry, 1, 100) <= 0) continue;
    const ssize_t got = ::recv(fd, buffer, sizeof(buffer), MSG_DONTWAIT);
    if (got == 0 || (got < 0 && errno == ECONNRESET)) return true;
    if (got < 0 && errno != EAGAIN) return false;
  }
  return false;
}

bool OpenAfter(int fd, int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  char buffer[64];
  while (true) {
    const ssize_t got = ::recv(fd, buffer, sizeof(buffer), MSG_DONTWAIT);
    if (got > 0) continue;  // the challenge
    return got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
}

TEST(HandshakeAcceptorTest, AdmitsAMemberAtOnceBesideSilentTricklingAndJunkStrangers) {
  Listening listening = Listen();
  Drops drops;
  HandshakeAcceptor acceptor(listening.listener, kSecret, Options(&drops));
  Intruders intruders;
  ASSERT_EQ(intruders.Attack(listening.address, 8, 4, 4), 16);
  const auto start = Clock::now();
  std::thread member = Member(listening.address, 3, std::string("\x05hello", 6));
  std::vector<AdmittedConnection> admitted = AdmitFor(acceptor, 1, kTimeoutMs);
  const auto elapsed = Clock::now() - start;
  ASSERT_EQ(admitted.size(), 1u);
  EXPECT_EQ(admitted[0].hello.rank, 3);
  EXPECT_EQ(admitted[0].request, std::string("\x05hello", 6));
  EXPECT_LT(elapsed, std::chrono::milliseconds(1000));
  admitted.clear();  // lets the member go
  member.join();
  // The junk replies failed authentication; the others are still pending.
  AdmitFor(acceptor, 1, 200);
  size_t authentication_failures = 0;
  for (const Status& why : drops.statuses) {
    authentication_failures += why.message().find("failed authentication") != std::string::npos;
  }
  EXPECT_EQ(authentication_failures, 4u);
  EXPECT_EQ(acceptor.pending(), 12u);
}

TEST(HandshakeAcceptorTest, DropsAStrangerWhoseBudgetIsSpent) {
  Listening listening = Listen();
  Drops drops;
  AcceptorOptions options = Options(&drops);
  options.budget_ms = 200;
  HandshakeAcceptor acceptor(listening.listener, kSecret, options);
  const int idle = Intruders::Connect(listening.address);
  ASSERT_GE(idle, 0);
  const auto start = Clock::now();
  while (drops.statuses.empty() && Clock::now() - start < std::chrono::seconds(5)) {
    std::vector<AdmittedConnection> admitted;
    ASSERT_TRUE(acceptor.Admit(Deadline::AfterMs(1000), &admitted).ok());
  }
  ASSERT_EQ(drops.statuses.size(), 1u);
  EXPECT_EQ(drops.statuses[0].code(), chorusTimeout);
  EXPECT_NE(drops.statuses[0].message().find("within 200 ms"), std::string::npos) << drops.statuses[0].message();
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(190));
  EXPECT_EQ(acceptor.pending(), 0u);
  EXPECT_TRUE(ClosedByPeer(idle));
  ::close(idle);
}

TEST(HandshakeAcceptorTest, NewerConnectionsFromOneSourcePushTheOldestOut) {
  Listening listening = Listen();
  Drops drops;
  AcceptorOptions options = Options(&drops);
  options.max_pending_per_source = 3;
  HandshakeAcceptor acceptor(listening.listener, kSecret, options);
  std::vector<int> strangers;
  for (int i = 0; i < 6; ++i) {
    strangers.push_back(Intruders::Connect(listening.address));
    ASSERT_GE(strangers.back(), 0);
    AdmitFor(acceptor, 1, 50);  // accepted in this order
  }
  EXPECT_EQ(acceptor.pending(), 3u);
  ASSERT_EQ(drops.statuses.size(), 3u);
  EXPECT_NE(drops.statuses[0].message().find("pushed out"), std::string::npos) << drops.statuses[0].message();
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(ClosedByPeer(strangers[i])) << i;
  for (int i = 3; i < 6; ++i) EXPECT_TRUE(OpenAfter(strangers[i], 0)) << i;
  // A member is still admitted (and pushes the oldest stranger out).
  std::thread member = Member(listening.address, 1, std::string("\x01x", 2));
  std::vector<AdmittedConnection> admitted = AdmitFor(acceptor, 1, kTimeoutMs);
  ASSERT_EQ(admitted.size(), 1u);
  admitted.clear();
  member.join();
  for (int fd : strangers) ::close(fd);
}

TEST(HandshakeAcceptorTest, ReadsTheRequestExactlyAndNothingAfterIt) {
  Listening listening = Listen();
  Drops drops;
  HandshakeAcceptor acceptor(listening.listener, kSecret, Options(&drops));
  std::thread member = Member(listening.address, 7, std::string("\x03" "abc", 4), "first message");
  std::vector<AdmittedConnection> admitted = AdmitFor(acceptor, 1, kTimeoutMs);
  ASSERT_EQ(admitted.size(), 1u);
  EXPECT_EQ(admitted[0].request, std::string("\x03" "abc", 4));
  char rest[13];
  ASSERT_TRUE(admitted[0].socket.RecvAll(rest, sizeof(rest), Deadline::AfterMs(kTimeoutMs)).ok());
  EXPECT_EQ(std::string(rest, sizeof(rest)), "first message");
  admitted.clear();
  member.join();
  EXPECT_TRUE(drops.statuses.empty());
}

TEST(HandshakeAcceptorTest, AMalformedRequestIsDroppedAndReported) {
  Listening listening = Listen();
  Drops drops;
  HandshakeAcceptor acceptor(listening.listener, kSecret, Options(&drops));
  std::thread member = Member(listening.address, 2, "!");
  const auto start = Clock::now();
  while (drops.statuses.empty() && Clock::now() - start < std::chrono::seconds(5)) {
    std::vector<AdmittedConnection> admitted;
    ASSERT_TRUE(acceptor.Admit(Deadline::AfterMs(100), &admitted).ok());
    EXPECT_TRUE(admitted.empty());
  }
  member.join();
  ASSERT_EQ(drops.statuses.size(), 1u);
  EXPECT_NE(drops.statuses[0].message().find("malformed test request"), std::string::npos);
}

// A member whose bytes arrive one at a time (a slow link) is still admitted:
// nothing waits for a whole message on one connection.
TEST(HandshakeAcceptorTest, AHandshakeArrivingByteByByteIsAdmitted) {
  Listening listening = Listen();
  Drops drops;
  HandshakeAcceptor acceptor(listening.listener, kSecret, Options(&drops));
  // A member's handshake through a socket pair, relayed one byte per 2 ms.
  std::thread relay([&] {
    int pair[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
    Socket member_side(pair[0], "member");
    Socket relay_side(pair[1], "relay");
    std::thread member([&] {
      Hello hello;
      hello.rank = 4;
      EXPECT_TRUE(ConnectHandshake(member_side, kSecret, hello, Deadline::AfterMs(kTimeoutMs)).ok());
      EXPECT_TRUE(member_side.SendAll("\x02ok", 3, Deadline::AfterMs(kTimeoutMs)).ok());
    });
    const int wire = Intruders::Connect(listening.address);
    ASSERT_GE(wire, 0);
    uint8_t challenge[kHandshakeChallengeBytes];
    size_t got = 0;
    while (got < sizeof(challenge)) got += std::max<ssize_t>(0, ::recv(wire, challenge + got, sizeof(challenge) - got, 0));
    ASSERT_EQ(::send(pair[1], challenge, sizeof(challenge), 0), static_cast<ssize_t>(sizeof(challenge)));
    for (size_t i = 0; i < kHandshakeReplyBytes; ++i) {
      char byte;
      ASSERT_EQ(::recv(pair[1], &byte, 1, 0), 1);
      ASSERT_EQ(::send(wire, &byte, 1, MSG_NOSIGNAL), 1);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    uint8_t answer[kHandshakeAnswerBytes];
    got = 0;
    while (got < sizeof(answer)) got += std::max<ssize_t>(0, ::recv(wire, answer + got, sizeof(answer) - got, 0));
    ASSERT_EQ(::send(pair[1], answer, sizeof(answer), 0), static_cast<ssize_t>(sizeof(answer)));
    for (int i = 0; i < 3; ++i) {
      char byte;
      ASSERT_EQ(::recv(pair[1], &byte, 1, 0), 1);
      ASSERT_EQ(::send(wire, &byte, 1, MSG_NOSIGNAL), 1);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    member.join();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ::close(wire);
  });
  std::vector<AdmittedConnection> admitted = AdmitFor(acceptor, 1, kTimeoutMs);
  relay.join();
  ASSERT_EQ(admitted.size(), 1u);
  EXPECT_EQ(admitted[0].hello.rank, 4);
  EXPECT_EQ(admitted[0].request, "\x02ok");
  EXPECT_TRUE(drops.statuses.empty());
}

}  // namespace
}  // namespace chorus
