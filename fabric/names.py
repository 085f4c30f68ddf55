"""Mininet node and interface names of the fabric model's switches and hosts (pure).

One name per node: by default a Mininet node is called what the controller, the
summary, ``paths``, ``mrcctl`` and the topology files call it (``h1``, ``p0-leaf0``,
``p0-spine1``, ``nic3``, ``lx1``), so ``h1 ping h3`` works in the CLI as written. The
interface of port N is ``<node>-ethN``, N being the model's port number
(fabric/plan.py), so the switch's ``-i N@<node>-ethN`` and the cabling agree by
construction.

Linux allows 15 characters in an interface name. A fabric whose longest
``<node>-ethN`` would not fit (``p0-spine10-eth12``: more than 9 spines or leaves
with many ports) names its nodes compactly instead: ``p0l1`` (plane 0 leaf 1),
``p0s0``, ``n3`` (NIC of h3), ``h3``, ``x1`` (Linux node), by index, so
explicit-graph names like ``tor-a`` do not matter.

A node prefix (``mrc`` plus up to 4 letters/digits) is for networks that must not
meet any other on the machine (tests, experiments, benchmarks, a second ``make
run``): every name then is ``<prefix>`` + the compact name (``mrcab1p0l1``), and
cleanup finds such nodes by the prefix. Without a prefix, cleanup finds a network by
the record of its node and interface names in the run directory
(topologies/fabric_net.py writes it before the first node exists; tools/cleanup.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fabric import plan as P
from fabric.entries import Node, nodes
from fabric.paths import links
from fabric.topology import Topology, TopologyError

DEFAULT_PREFIX = ""
MAX_IFNAME = 15  # IFNAMSIZ - 1
PREFIX_RE = re.compile(r"(mrc[a-z0-9]{0,4})?")


def intf_name(node: str, port: int) -> str:
    """The Mininet interface of ``node``'s port ``port``."""
    return f"{node}-eth{port}"


def switch_node(prefix: str, n: Node) -> str:
    """Compact Mininet name of a fabric switch or NIC of the controller."""
    if n.tier == P.LEAF:
        return f"{prefix}p{n.plane}l{n.index}"
    if n.tier == P.SPINE:
        return f"{prefix}p{n.plane}s{n.index}"
    return f"{prefix}n{n.index + 1}"


def inner_host(linux_name: str) -> str:
    """The controller-side name of the host behind Linux SRv6 node ``linux_name`` (lx1 -> lx1h)."""
    return f"{linux_name}h"


def host_node(prefix: str, host_index: int) -> str:
    """Compact Mininet name of host ``h<index + 1>``."""
    return f"{prefix}h{host_index + 1}"


@dataclass(frozen=True)
class NodeNames:
    """Both ways between the model's names and the Mininet names of one network."""

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
    """A node prefix is empty (the model's names) or `mrc` plus at most 4 characters
    (cleanup finds `mrc*` names; interface names have 15 characters)."""
    if not PREFIX_RE.fullmatch(prefix):
        raise TopologyError(f"node prefix {prefix!r}: give `mrc` plus at most 4 lower-case letters/digits, or none "
                            "(cleanup finds `mrc*` names; interface names have 15 characters)")


def _top_port(topo: Topology) -> int:
    return max(P.highest_port(topo)[1], P.nic_plane_port(topo.planes - 1))


def _fits(to_mn: dict[str, str], top_port: int) -> bool:
    return len(intf_name(max(to_mn.values(), key=len), top_port)) <= MAX_IFNAME


def node_names(topo: Topology, prefix: str = DEFAULT_PREFIX) -> NodeNames:
    """The Mininet names of every switch, NIC and host of ``topo``: the controller's
    names when there is no prefix and they fit, else ``prefix`` + the compact names;
    refuses a topology whose longest interface name would not fit 15 characters."""
    check_prefix(prefix)
    top_port = _top_port(topo)
    if not prefix:
        same = {n.name: n.name for n in nodes(topo)}
        same.update({h.name: h.name for h in topo.hosts})
        for lx in topo.linux_hosts:
            same[lx.name] = lx.name
            same[inner_host(lx.name)] = inner_host(lx.name)
        if _fits(same, top_port) and all(re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", v) for v in same.values()):
            return NodeNames(prefix, same, {v: k for k, v in same.items()})
    to_mn: dict[str, str] = {n.name: switch_node(prefix, n) for n in nodes(topo)}
    to_mn.update({h.name: host_node(prefix, h.index) for h in topo.hosts})
    for lx in topo.linux_hosts:  # the Linux SRv6 node and the host behind it
        to_mn[lx.name] = f"{prefix}x{lx.index + 1}"
        to_mn[inner_host(lx.name)] = f"{prefix}x{lx.index + 1}h"
    if not _fits(to_mn, top_port):
        longest = intf_name(max(to_mn.values(), key=len), top_port)
        raise TopologyError(f"topology {topo.name!r}: Mininet interface {longest!r} is longer "
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
    """Every Mininet link: host to NIC port 0, then the model's links (NIC plane
    port to leaf, leaf uplink to spine) with the plan's port numbers."""
    out = [Cable(names.mininet(h.name), 0, names.mininet(h.nic), P.NIC_HOST_PORT, None) for h in topo.hosts]
    out += [Cable(names.mininet(inner_host(lx.name)), 0, names.mininet(lx.name), 1, None) for lx in topo.linux_hosts]
    for link in links(topo):
        out.append(Cable(names.mininet(link.a), link.a_port, names.mininet(link.b), link.b_port, link.name))
    return out
