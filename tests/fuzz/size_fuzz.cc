// Size and number strings of the environment (CHORUS_CHUNK_BYTES,
// CHORUS_SHM_RING_BYTES, CHORUS_SOCKET_RCVBUF/SNDBUF, CHORUS_TIMEOUT_MS,
// CHORUS_SECRET): the shared parsers of base/config.h on any text.
#include <cctype>
#include <cstring>
#include <string>

#include "base/config.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chorus;
  const std::string text(reinterpret_cast<const char*>(data), size);

  size_t bytes = 7;
  if (ParseBytes(text, "CHORUS_CHUNK_BYTES", &bytes).ok()) {
    FUZZ_CHECK(!text.empty() && std::isdigit(static_cast<unsigned char>(text[0])));
  } else {
    FUZZ_CHECK(bytes == 7);
  }
  size_t ring = 7;
  if (ParseShmRingBytes(text, &ring).ok()) {
    FUZZ_CHECK(ring == 0 || (ring >= (256u << 10) && ring <= (1u << 30) && ring % 64 == 0));
  } else {
    FUZZ_CHECK(ring == 7);
  }
  int buffer = 7;
  if (ParseSocketBufferBytes(text, "CHORUS_SOCKET_RCVBUF", &buffer).ok()) {
    FUZZ_CHECK(buffer >= 0 && buffer <= kMaxSocketBufferBytes);
  } else {
    FUZZ_CHECK(buffer == 7);
  }
  long long number = 7;
  if (!ParseInt(text, "CHORUS_TIMEOUT_MS", &number).ok()) FUZZ_CHECK(number == 7);
  unsigned char secret[16];
  std::memset(secret, 7, sizeof(secret));
  if (ParseHex128(text, "CHORUS_SECRET", secret).ok()) FUZZ_CHECK(text.size() == 32);
  return 0;
}
