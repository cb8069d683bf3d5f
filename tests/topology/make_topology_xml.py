#!/usr/bin/env python3
"""Writes the hwloc XML topologies topology tests load (run from this folder).

two_sockets.xml: 2 packages x 2 NUMA nodes x 8 cores (one PU each), an L3 per
NUMA node; NIC eth0 on NUMA node 0, NIC eth1 with RDMA device mlx5_0 on NUMA
node 2; NUMA nodes 1 and 3 have no NIC.
one_socket.xml: 1 package, 1 NUMA node, 4 cores x 2 PUs, one L3, NIC eno1
attached to the package.
"""

gp = [0]


def gp_index():
    gp[0] += 1
    return gp[0]


def mask(bits):
    value = sum(1 << b for b in bits)
    return "0x%08x" % value


def sets(cpus, nodes, machine=False):
    c, n = mask(cpus), mask(nodes)
    text = 'cpuset="%s" complete_cpuset="%s" ' % (c, c)
    if machine:
        text += 'allowed_cpuset="%s" ' % c
    text += 'nodeset="%s" complete_nodeset="%s" ' % (n, n)
    if machine:
        text += 'allowed_nodeset="%s" ' % n
    return text


def nic(indent, bus, osdevs):
    pad = " " * indent
    out = [pad + '<object type="Bridge" gp_index="%d" bridge_type="0-1" depth="0" bridge_pci="0000:[%02x-%02x]">'
           % (gp_index(), bus, bus)]
    out.append(pad + '  <object type="PCIDev" gp_index="%d" pci_busid="0000:%02x:00.0" '
               'pci_type="0200 [8086:1572] [8086:0000] 01" pci_link_speed="0.000000">' % (gp_index(), bus))
    for name, osdev_type in osdevs:
        out.append(pad + '    <object type="OSDev" gp_index="%d" name="%s" osdev_type="%d"/>'
                   % (gp_index(), name, osdev_type))
    out.append(pad + "  </object>")
    out.append(pad + "</object>")
    return out


def cores(indent, first_pu, count, pus_per_core, nodes):
    out, pad = [], " " * indent
    for core in range(count):
        pus = list(range(first_pu + core * pus_per_core, first_pu + (core + 1) * pus_per_core))
        out.append(pad + '<object type="Core" os_index="%d" %sgp_index="%d">' % (pus[0], sets(pus, nodes), gp_index()))
        for pu in pus:
            out.append(pad + '  <object type="PU" os_index="%d" %sgp_index="%d"/>' % (pu, sets([pu], nodes), gp_index()))
        out.append(pad + "</object>")
    return out


def numa(indent, node, cpus):
    return [" " * indent + '<object type="NUMANode" os_index="%d" %sgp_index="%d" local_memory="17179869184"/>'
            % (node, sets(cpus, [node]), gp_index())]


def l3(indent, index, cpus, nodes, body):
    pad = " " * indent
    return ([pad + '<object type="L3Cache" os_index="%d" %sgp_index="%d" cache_size="16777216" depth="3" '
             'cache_linesize="64" cache_associativity="16" cache_type="0">' % (index, sets(cpus, nodes), gp_index())]
            + body + [pad + "</object>"])


def document(machine_cpus, machine_nodes, body):
    gp[0] = 0
    head = ['<?xml version="1.0" encoding="UTF-8"?>', '<!DOCTYPE topology SYSTEM "hwloc2.dtd">',
            '<topology version="2.0">',
            '  <object type="Machine" os_index="0" %sgp_index="%d">' % (sets(machine_cpus, machine_nodes, True),
                                                                          gp_index())]
    return "\n".join(head + body + ["  </object>", "</topology>", ""])


def two_sockets():
    gp[0] = 1
    body = []
    for package in range(2):
        cpus = list(range(package * 16, package * 16 + 16))
        nodes = [package * 2, package * 2 + 1]
        body.append('    <object type="Package" os_index="%d" %sgp_index="%d">' % (package, sets(cpus, nodes),
                                                                                    gp_index()))
        for half in range(2):
            node = package * 2 + half
            node_cpus = list(range(node * 8, node * 8 + 8))
            inner = numa(8, node, node_cpus) + cores(8, node * 8, 8, 1, [node])
            if node == 0:
                inner += nic(8, 0x10, [("eth0", 2)])
            if node == 2:
                inner += nic(8, 0x90, [("eth1", 2), ("mlx5_0", 3)])
            body += l3(6, node, node_cpus, [node], inner)
        body.append("    </object>")
    return document(list(range(32)), [0, 1, 2, 3], body)


def one_socket():
    gp[0] = 1
    cpus = list(range(8))
    body = ['    <object type="Package" os_index="0" %sgp_index="%d">' % (sets(cpus, [0]), gp_index())]
    body += numa(6, 0, cpus)
    body += l3(6, 0, cpus, [0], cores(8, 0, 4, 2, [0]))
    body += nic(6, 0x02, [("eno1", 2)])
    body.append("    </object>")
    return document(cpus, [0], body)


if __name__ == "__main__":
    with open("two_sockets.xml", "w") as f:
        f.write(two_sockets())
    with open("one_socket.xml", "w") as f:
        f.write(one_socket())
