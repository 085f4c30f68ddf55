"""Links, paths and what a failure removes (pure).

Why: ``mrcctl links``, ``mrcctl paths``, ``mrcctl fail`` and the Mininet network
all name the same cables; the walkers in the tests follow the same cabling. A link is
named by its two ends, fabric side first: ``p0-leaf1:p0-spine0`` (leaf to spine),
``nic3:p0-leaf1`` (a NIC's plane port to its leaf) or ``lx1:p0-leaf0`` (a Linux SRv6
node to its leaf; taking it down changes no table).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from fabric import plan as P
from fabric.entries import Failures, Node, nodes
from fabric.topology import Host, LinuxHost, Topology, TopologyError


@dataclass(frozen=True, order=True)
class Link:
    """A cable: ``a`` port ``a_port`` to ``b`` port ``b_port``."""

    kind: str  # "fabric" (leaf-spine), "nic" (NIC plane port to leaf), "linux" (Linux SRv6 node to leaf)
    plane: int
    a: str
    a_port: int
    b: str
    b_port: int
    leaf: int
    other: int  # spine index, host index for a NIC link, Linux node index

    @property
    def name(self) -> str:
        return f"{self.a}:{self.b}"


def links(topo: Topology) -> list[Link]:
    """Every cable of the fabric: leaf-spine, then NIC-leaf, plane by plane."""
    out: list[Link] = []
    for p in range(topo.planes):
        for leaf in range(len(topo.leaves)):
            for s in topo.uplinks(p, leaf):
                out.append(Link("fabric", p, topo.leaf_name(p, leaf), P.leaf_uplink_port(topo, s),
                                topo.spine_name(p, s), P.spine_port(leaf), leaf, s))
        for h in topo.hosts:
            out.append(Link("nic", p, h.nic, P.nic_plane_port(p), topo.leaf_name(p, h.leaf), h.port, h.leaf, h.index))
    for lx in topo.linux_hosts:
        out.append(Link("linux", lx.plane, lx.name, 0, topo.leaf_name(lx.plane, lx.leaf), lx.port, lx.leaf, lx.index))
    return out


def find_link(topo: Topology, name: str) -> Link:
    """The link called ``name`` (either end first), or one line saying how links are named."""
    ends = name.split(":")
    if len(ends) == 2:
        for link in links(topo):
            if {link.a, link.b} == set(ends):
                return link
    raise TopologyError(f"no link {name!r} in topology {topo.name!r}; links are named by their two ends, "
                        "e.g. p0-leaf0:p0-spine0 or nic1:p0-leaf0 (see `mrcctl links`)")


def failures_of(down: list[Link] | set[Link]) -> Failures:
    """The Failures value (what the entries depend on) of a set of links that are down."""
    return Failures(frozenset((k.plane, k.leaf, k.other) for k in down if k.kind == "fabric"),
                    frozenset((k.plane, k.other) for k in down if k.kind == "nic"))


@lru_cache(maxsize=8)
def _nodes_by_name(topo: Topology) -> dict[str, Node]:
    return {x.name: x for x in nodes(topo)}


def neighbour(topo: Topology, n: Node, port: int) -> tuple[Node | Host | LinuxHost, int]:
    """What is at the other end of switch ``n``'s ``port``: (node or host, its port)."""
    by_name = _nodes_by_name(topo)  # walkers call this once per hop
    if n.tier == P.NIC:
        host = topo.hosts[n.index]
        if port == P.NIC_HOST_PORT:
            return host, 0
        plane = port - 1
        if 0 <= plane < topo.planes:
            return by_name[topo.leaf_name(plane, host.leaf)], host.port
    elif n.tier == P.LEAF:
        if 1 <= port <= topo.leaves[n.index].hosts:
            host = topo.hosts[topo.first_host(n.index) + port - 1]
            return by_name[host.nic], P.nic_plane_port(n.plane)
        spine = port - topo.max_hosts_per_leaf - 1
        if 0 <= spine < topo.spines and topo.cabled(n.plane, n.index, spine):
            return by_name[topo.spine_name(n.plane, spine)], P.spine_port(n.index)
        for lx in topo.linux_on(n.plane, n.index):
            if lx.port == port:
                return lx, 0
    elif n.tier == P.SPINE:
        leaf = port - 1
        if 0 <= leaf < len(topo.leaves) and topo.cabled(n.plane, leaf, n.index):
            return by_name[topo.leaf_name(n.plane, leaf)], P.leaf_uplink_port(topo, n.index)
    raise TopologyError(f"{n.name} has no port {port} in topology {topo.name!r}")


@dataclass(frozen=True)
class PathInfo:
    """One EV of a source NIC towards a destination: plane, switches in order, carrier."""

    ev: int
    plane: int
    spine: int | None
    hops: tuple[str, ...]
    carrier: int
    links: tuple[str, ...]
    up: bool


def paths(topo: Topology, src: Host, dst: Host, down: set[Link] | None = None) -> list[PathInfo]:
    """Every EV of ``src``'s NIC towards ``dst``, with its hops and whether it is up."""
    down_names = {k.name for k in (down or set())}
    out: list[PathInfo] = []
    for e in P.nic_evs(topo, src, dst):
        p = e.plane
        la, lb = topo.leaf_name(p, src.leaf), topo.leaf_name(p, dst.leaf)
        if src.leaf == dst.leaf:
            hops: tuple[str, ...] = (src.nic, la, dst.nic)
            cables: tuple[str, ...] = (f"{src.nic}:{la}", f"{dst.nic}:{lb}")
            spine = None
        else:
            sp = topo.spine_name(p, e.spine)
            hops = (src.nic, la, sp, lb, dst.nic)
            cables = (f"{src.nic}:{la}", f"{la}:{sp}", f"{lb}:{sp}", f"{dst.nic}:{lb}")
            spine = e.spine
        out.append(PathInfo(e.ev, p, spine, hops, P.path_carrier(p, src.leaf, e.spine, dst.leaf, dst.port),
                            cables, not (set(cables) & down_names)))
    return out
