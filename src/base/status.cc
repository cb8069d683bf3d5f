#include "base/status.h"

#include <cstring>

namespace chorus {

Status ErrnoError(int err, const std::string& what) {
  char buf[256];
  // GNU strerror_r may return a static string instead of filling buf.
  const char* text = strerror_r(err, buf, sizeof(buf));
  return Status(chorusSystemError, StrCat(what, ": ", text, " (errno ", err, ")"));
}

}  // namespace chorus
