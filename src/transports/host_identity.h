// HostIdentity: what decides whether two ranks may talk through shared
// memory. Equal strings mean the same kernel instance (hostname + boot id)
// AND the same network namespace, so ranks emulating separate hosts in
// their own namespaces on one machine count as different hosts.
#pragma once

#include <string>

namespace chorus {

// "<hostname>/<boot id>/net:[<inode>]"; a part that cannot be read is "?".
std::string HostIdentity();

}  // namespace chorus
