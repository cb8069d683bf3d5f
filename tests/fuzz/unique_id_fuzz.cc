// chorusUniqueId contents: DecodeUniqueId on any 128 bytes, and on ids
// sealed with a valid checksum around a fuzzed secret and root address (the
// checksum would otherwise stop nearly every input before the address
// parsing).
#include <algorithm>
#include <cstring>
#include <string>

#include "bootstrap/bootstrap.h"
#include "fuzz_check.h"

namespace chorus {
namespace {

void CheckDecodes(const chorusUniqueId& id) {
  UniqueIdContents contents;
  if (!DecodeUniqueId(id, &contents).ok()) return;
  // What decodes encodes back to the same bytes.
  FUZZ_CHECK(!contents.root_address.empty() && contents.root_address.size() <= 96);
  chorusUniqueId again;
  FUZZ_CHECK(EncodeUniqueId(contents, &again).ok());
  FUZZ_CHECK(std::memcmp(again.internal, id.internal, sizeof(id.internal)) == 0);
}

}  // namespace
}  // namespace chorus

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chorus;
  // Mode 1: the bytes as an id (shorter inputs are zero-padded).
  chorusUniqueId raw = {};
  std::memcpy(raw.internal, data, std::min(size, sizeof(raw.internal)));
  CheckDecodes(raw);
  // Mode 2: secret (16 bytes), then the root address.
  if (size >= 16) {
    UniqueIdContents contents;
    std::memcpy(contents.secret, data, 16);
    contents.root_address.assign(reinterpret_cast<const char*>(data) + 16, size - 16);
    chorusUniqueId sealed;
    if (EncodeUniqueId(contents, &sealed).ok()) {
      UniqueIdContents decoded;
      if (DecodeUniqueId(sealed, &decoded).ok()) {
        FUZZ_CHECK(decoded.root_address == contents.root_address);
        FUZZ_CHECK(std::memcmp(decoded.secret, contents.secret, 16) == 0);
      }
      CheckDecodes(sealed);
    }
  }
  return 0;
}
