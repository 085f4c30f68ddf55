"""Mininet node and interface names of the controller's switches and hosts (pure).

Why a scheme of our own: the controller names switches `p0-leaf1`, `p0-spine0`,
`nic3` and hosts `h3` (controller/entries.py, controller/topology.py), but Mininet
names a node's interfaces `<node>-eth<port>` and Linux allows 15 characters, so the
Mininet names are short: `<prefix>p0l1`, `<prefix>p0s0`, `<prefix>n3`, `<prefix>h3`
(leaves and spines by index, so explicit-graph names like `tor-a` do not matter).
Every name starts with the project prefix (`mrc` by default) so `make clean`
(tools/cleanup.py) finds what a crash leaves behind. The interface of port N is
`<node>-ethN`, N being the controller's port number (controller/plan.py), so the
switch's `-i N@<node>-ethN` and the cabling agree by construction.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from controller import plan as P
from controller.entries import Node, nodes
from controller.paths import links
from controller.topology import Topology, TopologyError

DEFAULT_PREFIX = "mrc"
MAX_IFNAME = 15  # IFNAMSIZ - 1
PREFIX_RE = re.compile(r"mrc[a-z0-9]{0,4}")


def intf_name(node: str, port: int) -> str:
    """The Mininet interface of ``node``'s port ``port``."""
    return f"{node}-eth{port}"


def switch_node(prefix: str, n: Node) -> str:
    """Mininet name of a fabric switch or NIC of the controller."""
    if n.tier == P.LEAF:
        return f"{prefix}p{n.plane}l{n.index}"
    if n.tier == P.SPINE:
        return f"{prefix}p{n.plane}s{n.index}"
    return f"{prefix}n{n.index + 1}"


def inner_host(linux_name: str) -> str:
    """The controller-side name of the host behind Linux SRv6 node ``linux_name`` (lx1 -> lx1h)."""
    return f"{linux_name}h"


def host_node(prefix: str, host_index: int) -> str:
    """Mininet name of host ``h<index + 1>``."""
    return f"{prefix}h{host_index + 1}"


@dataclass(frozen=True)
class NodeNames:
    """Both ways between the controller's names and the Mininet names of one network."""

    prefix: str
    to_mininet: dict[str, str]  # controller name (p0-leaf1, nic3, h3) -> Mininet name
    to_controller: dict[str, str]

    def mininet(self, name: str) -> str:
        try:
            return self.to_mininet[name]
        except KeyError:
            raise TopologyError(f"no switch or host {name!r} in this network; "
                                f"names are like {next(iter(self.to_mininet))}") from None

    def controller(self, node: str) -> str:
        return self.to_controller[node]


def check_prefix(prefix: str) -> None:
    """A node prefix must start with `mrc` (cleanup) and stay short (interface names)."""
    if not PREFIX_RE.fullmatch(prefix):
        raise TopologyError(f"node prefix {prefix!r}: give `mrc` plus at most 4 lower-case letters/digits "
                            "(cleanup finds `mrc*` names; interface names have 15 characters)")


def node_names(topo: Topology, prefix: str = DEFAULT_PREFIX) -> NodeNames:
    """The Mininet names of every switch, NIC and host of ``topo``; refuses a topology
    whose longest interface name would not fit Linux's 15 characters."""
    check_prefix(prefix)
    to_mn: dict[str, str] = {n.name: switch_node(prefix, n) for n in nodes(topo)}
    to_mn.update({h.name: host_node(prefix, h.index) for h in topo.hosts})
    for lx in topo.linux_hosts:  # the Linux SRv6 node and the host behind it
        to_mn[lx.name] = f"{prefix}x{lx.index + 1}"
        to_mn[inner_host(lx.name)] = f"{prefix}x{lx.index + 1}h"
    top_port = max(P.highest_port(topo)[1], P.nic_plane_port(topo.planes - 1))
    longest = max(to_mn.values(), key=len)
    if len(intf_name(longest, top_port)) > MAX_IFNAME:
        raise TopologyError(f"topology {topo.name!r}: Mininet interface {intf_name(longest, top_port)!r} is longer "
                            f"than {MAX_IFNAME} characters; use a shorter node prefix or fewer leaves/ports")
    return NodeNames(prefix, to_mn, {v: k for k, v in to_mn.items()})


@dataclass(frozen=True)
class Cable:
    """One Mininet link: node ``a`` port ``a_port`` to node ``b`` port ``b_port``, and the
    controller's name of the cable (None for a host's link to its NIC, which the
    controller does not model as a link)."""

    a: str
    a_port: int
    b: str
    b_port: int
    name: str | None

    @property
    def a_intf(self) -> str:
        return intf_name(self.a, self.a_port)

    @property
    def b_intf(self) -> str:
        return intf_name(self.b, self.b_port)


def cables(topo: Topology, names: NodeNames) -> list[Cable]:
    """Every Mininet link: host to NIC port 0, then the controller's links (NIC plane
    port to leaf, leaf uplink to spine) with the controller's port numbers."""
    out = [Cable(names.mininet(h.name), 0, names.mininet(h.nic), P.NIC_HOST_PORT, None) for h in topo.hosts]
    out += [Cable(names.mininet(inner_host(lx.name)), 0, names.mininet(lx.name), 1, None) for lx in topo.linux_hosts]
    for link in links(topo):
        out.append(Cable(names.mininet(link.a), link.a_port, names.mininet(link.b), link.b_port, link.name))
    return out
