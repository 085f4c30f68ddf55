"""What the page draws: the fabric's switches by plane and its cables (pure).

Why from the fabric model: the drawing names every switch and cable as ``mrcctl``
does (``fabric.entries.nodes``, ``fabric.paths.links``), so a link the page shows
down is the cable ``mrcctl fail`` took down. Computed once per topology; the page
lays it out itself (one panel per plane: spines, leaves, then the NICs and hosts
of that plane) and receives only the links' states and loads each second, by their
position in ``links``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from fabric import plan as P
from fabric.entries import nodes
from fabric.paths import Link, links
from fabric.topology import Topology


@dataclass(frozen=True)
class PortEnd:
    """What a switch's port is cabled to (None: nothing the fabric model knows)."""

    link: str
    plane: int
    peer: str


class Drawing:
    """The fabric of ``topo`` as the page draws it, and the switch ports' cables."""

    def __init__(self, topo: Topology) -> None:
        self.topo = topo
        self.links: list[Link] = links(topo)

    @cached_property
    def ports(self) -> dict[tuple[str, int], PortEnd]:
        """(switch, port) -> its cable; a NIC's plane port is ``plan.nic_plane_port``."""
        out: dict[tuple[str, int], PortEnd] = {}
        for k in self.links:
            out[(k.a, k.a_port)] = PortEnd(k.name, k.plane, k.b)
            out[(k.b, k.b_port)] = PortEnd(k.name, k.plane, k.a)
        return out

    def cabled(self, switch: str) -> list[int]:
        """The ports of ``switch`` that have a cable (a NIC's: its plane ports)."""
        return sorted(port for (name, port) in self.ports if name == switch)

    @cached_property
    def programs(self) -> dict[str, str]:
        """Every P4 switch of the fabric and the program it runs (``fabric`` or ``nic``)."""
        return {n.name: n.program for n in nodes(self.topo)}

    @cached_property
    def planes_of(self) -> dict[str, str]:
        """The plane of every leaf and spine (as a label: NICs are in every plane)."""
        return {n.name: str(n.plane) for n in nodes(self.topo) if n.tier != P.NIC}

    def to_json(self) -> dict[str, Any]:
        """The page's model: planes (spines, leaves, NICs with their hosts), links."""
        topo = self.topo
        switches = nodes(topo)
        planes = []
        for p in range(topo.planes):
            planes.append({
                "plane": p,
                "spines": [n.name for n in switches if n.tier == P.SPINE and n.plane == p],
                "leaves": [n.name for n in switches if n.tier == P.LEAF and n.plane == p],
                "linux": [lx.name for lx in topo.linux_hosts if lx.plane == p],
            })
        return {
            "name": topo.name,
            "summary": topo.summary(),
            "switches": len(switches),
            "hosts": [{"name": h.name, "nic": h.nic, "leaf": h.leaf} for h in topo.hosts],
            "planes": planes,
            "links": [{"name": k.name, "kind": k.kind, "plane": k.plane, "a": k.a, "a_port": k.a_port,
                       "b": k.b, "b_port": k.b_port} for k in self.links],
        }
