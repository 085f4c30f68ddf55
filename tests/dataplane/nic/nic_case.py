"""Which NIC of which topology a NIC test drives, and the plan's values in scapy's text form.

Why: the NIC tests build frames from addresses, MACs and carriers; those come from
the controller's address plan (fabric/plan.py) and the NIC's entries from
fabric/entries.py. This module only picks the NIC and turns the plan's integers
into text. It does not compute a plan of its own and says nothing of what nic.p4 does
to a packet.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

from fabric import plan as P
from fabric.entries import Entry, nic_entries
from fabric.topology import Host, Topology, from_parameters

NIC_HOST_PORT = P.NIC_HOST_PORT
nic_plane_port = P.nic_plane_port

# The NIC tests' fabric: 4 planes x 4 spines, 16 paths between two leaves;
# 16 EVs per NIC, so every (plane, spine) path is one EV and one spray member.
TEST_FABRIC = from_parameters(name="nic-tests", planes=4, spines=4, leaves=3, hosts_per_leaf=2, evs_per_nic=16)


def host_ip(leaf: int, port: int) -> str:
    return P.ip(P.host_addr(leaf, port))


def nic_ip(leaf: int, port: int) -> str:
    return P.ip(P.nic_addr(leaf, port))


def gateway_ip(leaf: int, port: int) -> str:
    return P.ip(P.gateway_addr(leaf, port))


def carrier_ip(plane: int, src_leaf: int, spine: int, dst_leaf: int, dst_port: int) -> str:
    return P.ip(P.path_carrier(plane, src_leaf, spine, dst_leaf, dst_port))


def generated(topo: Topology) -> Topology:
    """The same fabric with GENERATED EVs."""
    return replace(topo, ev_mode="generated")


@dataclass(frozen=True)
class ExplicitEv:
    """One EXPLICIT-mode EV of the NIC: towards a destination host, over (plane, spine)."""

    ev: int
    dst_leaf: int
    dst_port: int
    plane: int
    spine: int


@dataclass(frozen=True)
class NicCase:
    """The NIC of host ``host`` in ``topo``."""

    topo: Topology
    host: Host

    @property
    def leaf(self) -> int:
        return self.host.leaf

    @property
    def port(self) -> int:
        return self.host.port

    @property
    def planes(self) -> int:
        return self.topo.planes

    @property
    def spines(self) -> int:
        return self.topo.spines

    @property
    def trim_dscp(self) -> int:
        return self.topo.trim_dscp

    @property
    def gw_mac(self) -> str:
        """MAC of the NIC's host port (the gateway the host sees)."""
        return P.mac_text(P.nic_gateway_mac(self.host))

    @property
    def host_mac(self) -> str:
        return P.mac_text(P.host_mac(self.host))

    def plane_mac(self, plane: int) -> str:
        """MAC of the NIC's port in ``plane``."""
        return P.mac_text(P.nic_plane_mac(self.host, plane))

    def leaf_mac(self, plane: int) -> str:
        """MAC of the leaf port of ``plane`` that faces this NIC."""
        return P.mac_text(P.mac(plane, P.LEAF, self.leaf, P.leaf_host_port(self.host)))

    def entries(self) -> list[Entry]:
        return nic_entries(self.topo, self.host)

    @cached_property
    def explicit(self) -> list[ExplicitEv]:
        """The NIC's EXPLICIT EVs towards every other host (empty in GENERATED mode)."""
        if self.topo.ev_mode != "explicit":
            return []
        return [ExplicitEv(e.ev, dst.leaf, dst.port, e.plane, e.spine)
                for dst in self.topo.hosts if dst != self.host for e in P.nic_evs(self.topo, self.host, dst)]


def nic_case(topo: Topology, leaf: int, port: int) -> NicCase:
    return NicCase(topo, topo.hosts[topo.first_host(leaf) + port - 1])
