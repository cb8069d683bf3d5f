// The pure parsing steps of the rendezvous wire format (rendezvous_protocol.h).
#include "bootstrap/rendezvous_protocol.h"

#include "chorus/chorus.h"

namespace chorus {
namespace rendezvous {

Status FrameRequest(const std::string& received, size_t* more) {
  if (received.size() < kRequestHeaderBytes) {
    *more = kRequestHeaderBytes - received.size();
    return Status::Ok();
  }
  const auto* header = reinterpret_cast<const uint8_t*>(received.data());
  const uint32_t blob_bytes = GetU32(header + 12);
  if (GetU32(header) != kRequestMagic || blob_bytes > kMaxBlobBytes) {
    return InvalidUsage("malformed rendezvous request");
  }
  *more = kRequestHeaderBytes + blob_bytes - received.size();
  return Status::Ok();
}

Status ParseReplyHeader(const uint8_t header[kReplyHeaderBytes], int nranks, const std::string& from, uint32_t* code,
                        uint64_t* body_bytes) {
  *code = GetU32(header);
  *body_bytes = GetU64(header + 4);
  const uint64_t limit = *code == chorusSuccess ? MaxTableBytes(nranks) : kMaxErrorBytes;
  if (*code >= chorusNumResults || *body_bytes > limit) {
    return InternalError("rendezvous: malformed reply from ", from);
  }
  return Status::Ok();
}

Status ParseTable(const std::string& body, int nranks, std::vector<std::string>* blobs) {
  blobs->clear();
  size_t at = 0;
  for (int rank = 0; rank < nranks; ++rank) {
    if (body.size() - at < 4) return InternalError("rendezvous: truncated table from the root");
    const uint32_t length = GetU32(reinterpret_cast<const uint8_t*>(body.data() + at));
    at += 4;
    if (length > kMaxBlobBytes || body.size() - at < length) {
      return InternalError("rendezvous: bad blob length ", length, " for rank ", rank);
    }
    blobs->emplace_back(body, at, length);
    at += length;
  }
  if (at != body.size()) return InternalError("rendezvous: trailing bytes in the root's table");
  return Status::Ok();
}

}  // namespace rendezvous
}  // namespace chorus
