// A UCX status as a Status, for the UCX transport's sources.
#pragma once

#include <ucp/api/ucp.h>

#include <string>

#include "base/status.h"

namespace chorus {

inline Status UcxError(ucs_status_t status, const std::string& what) {
  return SystemError("UCX transport: ", what, ": ", ucs_status_string(status));
}

}  // namespace chorus
