// A rank's side of the rendezvous: join the root, send our blob, receive
// everyone's (or the root's reason for refusing).
#include "bootstrap/bootstrap.h"
#include "bootstrap/rendezvous_protocol.h"
#include "transports/socket/handshake.h"
#include "transports/socket/socket.h"

namespace chorus {

using namespace rendezvous;

Status Rendezvous(const UniqueIdContents& id, int rank, int nranks, const std::string& blob, Deadline deadline,
                  std::vector<std::string>* blobs) {
  if (nranks < 1 || rank < 0 || rank >= nranks) {
    return InvalidArgument("rendezvous: rank ", rank, " is out of range for ", nranks, " ranks");
  }
  if (blob.size() > kMaxBlobBytes) {
    return InvalidArgument("rendezvous: blob of ", blob.size(), " bytes exceeds ", kMaxBlobBytes);
  }
  SocketAddress root_address;
  CHORUS_RETURN_IF_ERROR(ParseSocketAddress(id.root_address, &root_address));
  Socket root;
  CHORUS_RETURN_IF_ERROR((id.root_listening ? Socket::ConnectToListener(root_address, deadline, &root)
                                             : Socket::Connect(root_address, deadline, &root))
                             .WithContext(StrCat("rank ", rank, " joining the rendezvous")));
  root.set_peer_name(StrCat("rendezvous root ", id.root_address));
  Hello hello;
  hello.purpose = ConnectionPurpose::kRendezvous;
  hello.rank = rank;
  CHORUS_RETURN_IF_ERROR(ConnectHandshake(root, id.secret, hello, deadline));

  std::string request(kRequestHeaderBytes, '\0');
  auto* header = reinterpret_cast<uint8_t*>(request.data());
  PutU32(header, kRequestMagic);
  PutU32(header + 4, static_cast<uint32_t>(rank));
  PutU32(header + 8, static_cast<uint32_t>(nranks));
  PutU32(header + 12, static_cast<uint32_t>(blob.size()));
  request += blob;
  CHORUS_RETURN_IF_ERROR(root.SendAll(request.data(), request.size(), deadline));

  uint8_t reply[kReplyHeaderBytes];
  Status received = root.RecvAll(reply, sizeof(reply), deadline);
  if (received.code() == chorusTimeout) {
    return TimeoutError("rank ", rank,
                        " timed out waiting for the other ranks to join the "
                        "rendezvous at ",
                        id.root_address);
  }
  CHORUS_RETURN_IF_ERROR(received);
  uint32_t code = 0;
  uint64_t body_bytes = 0;
  CHORUS_RETURN_IF_ERROR(ParseReplyHeader(reply, nranks, root.peer_name(), &code, &body_bytes));
  std::string body(body_bytes, '\0');
  CHORUS_RETURN_IF_ERROR(root.RecvAll(body.data(), body.size(), deadline));
  if (code != chorusSuccess) {
    return Status(static_cast<chorusResult_t>(code), StrCat(root.peer_name(), " refused rank ", rank, ": ", body));
  }
  return ParseTable(body, nranks, blobs);
}

}  // namespace chorus
