// Status: the error type used everywhere inside Chorus. It carries a public
// result code and a human message; the C boundary maps it to chorusResult_t
// and keeps the message for chorusGetLastError.
#pragma once

#include <sstream>
#include <string>
#include <utility>

#include "chorus/chorus.h"

namespace chorus {

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(chorusResult_t code, std::string message)
      : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == chorusSuccess; }
  chorusResult_t code() const { return code_; }
  const std::string& message() const { return message_; }

  // Returns a copy whose message is prefixed by `context: `.
  Status WithContext(const std::string& context) const {
    if (ok()) return *this;
    return Status(code_, context + ": " + message_);
  }
  // Marks a Status as deliberately unused.
  void IgnoreError() const {}

 private:
  chorusResult_t code_ = chorusSuccess;
  std::string message_;
};

// Concatenates anything streamable into one string.
template <typename... Args>
std::string StrCat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

template <typename... Args>
Status SystemError(const Args&... args) { return Status(chorusSystemError, StrCat(args...)); }
template <typename... Args>
Status InternalError(const Args&... args) { return Status(chorusInternalError, StrCat(args...)); }
template <typename... Args>
Status InvalidArgument(const Args&... args) { return Status(chorusInvalidArgument, StrCat(args...)); }
template <typename... Args>
Status InvalidUsage(const Args&... args) { return Status(chorusInvalidUsage, StrCat(args...)); }
template <typename... Args>
Status RemoteError(const Args&... args) { return Status(chorusRemoteError, StrCat(args...)); }
template <typename... Args>
Status TimeoutError(const Args&... args) { return Status(chorusTimeout, StrCat(args...)); }

// SystemError with strerror(err) appended.
Status ErrnoError(int err, const std::string& what);

}  // namespace chorus

#define CHORUS_RETURN_IF_ERROR(expr)              \
  do {                                            \
    ::chorus::Status chorus_status_ = (expr);     \
    if (!chorus_status_.ok()) return chorus_status_; \
  } while (0)
