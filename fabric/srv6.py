"""The routes of a Linux SRv6 node in the fabric (pure).

Why here: a Linux node (``linux_hosts`` in a topology file) sends into the fabric with
the kernel's own SRv6 encapsulation, one route per fabric host whose destination
address is the path's carrier. Which spine each route takes and what its carrier is
follow from the address plan; the Mininet node only writes them with ``ip route``.
"""

from __future__ import annotations

from dataclasses import dataclass

from fabric import plan as P
from fabric.topology import LinuxHost, Topology


@dataclass(frozen=True)
class Srv6Route:
    """``ip -6 route add <prefix> encap seg6 mode encap segs <carrier>``."""

    prefix: str  # a fabric host's /64, e.g. "fd00:0:1:1::/64"
    carrier: str  # the outer destination: the path's uSID carrier


def linux_node_routes(topo: Topology, lx: LinuxHost) -> list[Srv6Route]:
    """One route per fabric host: over the lowest spine of ``lx``'s plane cabled to
    both leaves (none for a host no spine reaches), straight down on its own leaf."""
    routes: list[Srv6Route] = []
    for h in topo.hosts:
        if h.leaf == lx.leaf:
            spine = None
        else:
            spine = next((s for s in topo.uplinks(lx.plane, lx.leaf) if topo.cabled(lx.plane, h.leaf, s)), None)
            if spine is None:
                continue
        carrier = P.path_carrier(lx.plane, lx.leaf, spine, h.leaf, h.port)
        routes.append(Srv6Route(f"{P.ip(P.host_prefix(h.leaf, h.port))}/64", P.ip(carrier)))
    return routes


def linux_node_locator(lx: LinuxHost) -> str:
    """The node's own locator (/48), on which it runs End.DT6."""
    return f"{P.ip(P.carrier([P.nic_usid(lx.port)]))}/48"
