// A survivor's side of shrink: find the lowest live rank and join it, or be
// the root when every lower rank is dead.
#include "bootstrap/shrink.h"

#include <algorithm>
#include <thread>

#include "base/log.h"
#include "bootstrap/rendezvous_protocol.h"
#include "bootstrap/shrink_protocol.h"
#include "transports/socket/handshake.h"

namespace chorus {
namespace {

using namespace shrink;

constexpr int kRescanPauseMs = 10;

// Joins the root candidate on `socket`. chorusRemoteError means the candidate
// died (or dropped us) before answering: the caller scans again.
Status JoinRoot(const RecoveryEndpoint& endpoint, const Socket& socket, int root, Deadline deadline,
                ShrinkOutcome* outcome) {
  Hello hello;
  hello.purpose = ConnectionPurpose::kRendezvous;
  hello.rank = endpoint.rank;
  CHORUS_RETURN_IF_ERROR(ConnectHandshake(socket, endpoint.secret, hello, deadline));
  uint8_t request[kJoinBytes];
  rendezvous::PutU32(request, kJoinMagic);
  rendezvous::PutU32(request + 4, static_cast<uint32_t>(endpoint.rank));
  rendezvous::PutU32(request + 8, static_cast<uint32_t>(endpoint.nranks));
  CHORUS_RETURN_IF_ERROR(socket.SendAll(request, sizeof(request), deadline));
  uint8_t header[kReplyHeaderBytes];
  Status received = socket.RecvAll(header, sizeof(header), deadline);
  if (received.code() == chorusTimeout) {
    return TimeoutError("rank ", endpoint.rank, " timed out waiting for shrink root rank ", root,
                        " to hear from every survivor");
  }
  CHORUS_RETURN_IF_ERROR(received);
  const uint32_t code = rendezvous::GetU32(header);
  const uint64_t body_bytes = rendezvous::GetU64(header + 4);
  if (code >= chorusNumResults || body_bytes > kMaxBodyBytes) {
    return InternalError("shrink: malformed reply from root rank ", root);
  }
  std::string body(body_bytes, '\0');
  CHORUS_RETURN_IF_ERROR(socket.RecvAll(body.data(), body.size(), deadline));
  // A refusal is final: rescanning would meet the same root again.
  if (code != chorusSuccess) {
    return Status(code == chorusRemoteError ? chorusInternalError : static_cast<chorusResult_t>(code),
                  StrCat("shrink root rank ", root, " refused rank ", endpoint.rank, ": ", body));
  }
  Table table;
  CHORUS_RETURN_IF_ERROR(DecodeTable(body, endpoint.nranks, &table));
  const auto mine = std::find(table.survivors.begin(), table.survivors.end(), endpoint.rank);
  if (mine == table.survivors.end() || table.survivors.front() != root) {
    return InternalError("shrink: root rank ", root, " sent a table without rank ", endpoint.rank);
  }
  outcome->survivors = table.survivors;
  outcome->new_rank = static_cast<int>(mine - table.survivors.begin());
  outcome->id.root_address = table.root_address;
  DeriveSecret(endpoint.secret, table.nonce, outcome->id.secret);
  return Status::Ok();
}

}  // namespace

Status AgreeOnSurvivors(RecoveryEndpoint& endpoint, Deadline gather_deadline, Deadline deadline,
                        ShrinkOutcome* outcome) {
  std::unique_lock<std::mutex> lock(endpoint.shrink_mutex, std::try_to_lock);
  if (!lock.owns_lock()) return InvalidUsage("a shrink of this communicator is already running on another thread");
  if (static_cast<int>(endpoint.addresses.size()) != endpoint.nranks || !endpoint.listener.valid()) {
    return InternalError("shrink: the communicator has no recovery endpoint");
  }
  while (!deadline.Expired()) {
    bool rescan = false;
    for (int candidate = 0; candidate < endpoint.rank && !rescan; ++candidate) {
      bool alive = false;
      Socket socket;
      CHORUS_RETURN_IF_ERROR(Probe(endpoint.addresses[candidate], deadline, &alive, &socket));
      if (!alive) continue;
      socket.set_peer_name(StrCat("shrink root candidate rank ", candidate, " (", socket.peer_name(), ")"));
      Status joined = JoinRoot(endpoint, socket, candidate, deadline, outcome);
      if (joined.code() != chorusRemoteError) return joined;
      CHORUS_INFO("SHRINK", "rank ", endpoint.rank, ": candidate root rank ", candidate,
                  " went away, scanning again: ", joined.message());
      rescan = true;
    }
    if (!rescan) return ServeAsRoot(endpoint, gather_deadline, deadline, outcome);
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(kRescanPauseMs, deadline.RemainingMs())));
  }
  return TimeoutError("rank ", endpoint.rank, ": shrink found no root before the deadline");
}

}  // namespace chorus
