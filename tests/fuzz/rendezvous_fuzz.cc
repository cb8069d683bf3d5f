// The rendezvous messages: the root's framing of a rank's request, a rank's
// parsing of the root's reply header and table, and the peer information
// blob inside the table. The first byte picks the rank count.
#include <cstring>
#include <string>
#include <vector>

#include "bootstrap/rendezvous_protocol.h"
#include "core/peer_info.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chorus;
  using namespace chorus::rendezvous;
  if (size < 1) return 0;
  const int nranks = 1 + data[0] % 8;
  const std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);

  // The root frames a request as its bytes arrive: the total it asks for
  // never shrinks below what it has, and never exceeds header + largest blob.
  for (size_t received = 0; received <= bytes.size(); received += received < 32 ? 1 : 97) {
    size_t more = 0;
    if (!FrameRequest(bytes.substr(0, received), &more).ok()) break;
    FUZZ_CHECK(received + more <= kRequestHeaderBytes + kMaxBlobBytes);
    if (more == 0) break;
  }

  if (bytes.size() >= kReplyHeaderBytes) {
    uint32_t code = 0;
    uint64_t body_bytes = 0;
    if (ParseReplyHeader(reinterpret_cast<const uint8_t*>(bytes.data()), nranks, "root", &code, &body_bytes).ok()) {
      FUZZ_CHECK(body_bytes <= MaxTableBytes(nranks) || body_bytes <= kMaxErrorBytes);
    }
  }

  std::vector<std::string> blobs;
  if (ParseTable(bytes, nranks, &blobs).ok()) {
    FUZZ_CHECK(blobs.size() == static_cast<size_t>(nranks));
    size_t total = 0;
    for (const std::string& blob : blobs) total += 4 + blob.size();
    FUZZ_CHECK(total == bytes.size());
    for (const std::string& blob : blobs) {
      PeerInfo info;
      if (PeerInfo::Decode(blob, &info).ok()) FUZZ_CHECK(info.Encode() == blob);
    }
  }
  PeerInfo info;
  if (PeerInfo::Decode(bytes, &info).ok()) FUZZ_CHECK(info.Encode() == bytes);
  return 0;
}
