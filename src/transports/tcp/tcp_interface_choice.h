// Which interface spec the TCP transport listens with: CHORUS_SOCKET_IFNAME
// when set; else, when the default rule has more than one candidate NIC and
// the host topology places some of them, exactly the one nearest to the
// rank's binding (topology/nic_choice.h); else the default rule unchanged.
#pragma once

#include <string>
#include <vector>

#include "topology/host_topology.h"
#include "transports/socket/interface.h"
#include "transports/transport.h"

namespace chorus {

// Pure choice over a given interface list (tests).
std::string TcpInterfaceSpec(const std::string& ifname, const HostTopology* topology, int local_rank,
                             const std::vector<NetworkInterface>& interfaces);

// Whether TcpInterfaceSpec may choose by topology on this host: `ifname`
// is empty and several interfaces pass the default rule.
bool TcpMayChooseInterface(const std::string& ifname);

// The same over this host's interfaces; the default rule when they cannot
// be listed (FindInterface then reports why).
std::string ChooseInterfaceSpec(const TransportOptions& options);

}  // namespace chorus
