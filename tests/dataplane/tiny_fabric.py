"""A tiny fabric and the table entries a controller would write into it.

Why: dataplane tests need switches filled the way the controller will fill them
(docs/addressing.md, docs/fabric.md) before the real controller exists. This module
computes those entries from the address plan as plain data, installs them through the
``p4target.Switch`` API, and knows the cabling so a test can walk a frame hop by hop.
It is test scaffolding with the controller's job, never the dataplane's: it does not
say what a switch does to a packet.

Shape: ``planes`` planes, each a 2-tier Clos of ``leaves`` leaves and ``spines``
spines; ``hosts_per_leaf`` NICs per leaf. Port numbers (this fixture's convention):
- leaf: port ``n`` (1..hosts_per_leaf) goes to the NIC of host (leaf, n); port
  ``hosts_per_leaf + 1 + j`` goes up to spine ``j``;
- spine: port ``1 + i`` goes down to leaf ``i``;
- NIC of host (leaf, n): port ``1 + plane`` is its port in ``plane``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Union

if TYPE_CHECKING:  # pragma: no cover
    from p4target import Switch

REPO = Path(__file__).resolve().parents[2]
FABRIC_P4 = REPO / "p4src" / "fabric.p4"

USID_BLOCK = 0xFCBB_BB00
LEAF, SPINE, NIC = 1, 2, 3  # the tier numbers of docs/addressing.md's MACs
TRIM_DSCP = 62  # the project's default trim mark (docs/packet-formats.md)
TRIM_PRIORITY = 7
UA_BASE = 0xF000  # uA local uSIDs: 0xF000 + port (docs/fabric.md)
NIC_USID_BASE = 0xE000


# ---- address plan (docs/addressing.md) ---------------------------------------


def usid(plane: int, tier: int, index: int) -> int:
    """Global uSID of a fabric switch."""
    if tier == LEAF:
        return 0x0100 + plane * 0x0300 + index
    if tier == SPINE:
        return 0x0100 + plane * 0x0300 + 0x0200 + index
    raise ValueError(f"tier {tier} has no global uSID")


def nic_usid(port: int) -> int:
    """Local uSID of the NIC on leaf port ``port``."""
    return NIC_USID_BASE + port


def ua_usid(port: int) -> int:
    """Local uA uSID of a switch's adjacency on ``port``."""
    return UA_BASE + port


def locator(usid_value: int) -> int:
    """``fcbb:bb00:<usid>::`` as an integer (the /48 of a uSID)."""
    return (USID_BLOCK << 96) | (usid_value << 80)


def mac(plane: int, tier: int, index: int, port: int) -> str:
    """``02:<plane>:<tier>:<index hi>:<index lo>:<port>``."""
    return "02:%02x:%02x:%02x:%02x:%02x" % (plane, tier, index >> 8, index & 0xFF, port & 0xFF)


def mac_int(text: str) -> int:
    return int(text.replace(":", ""), 16)


def host_addr(leaf: int, port: int) -> str:
    """Inner (host) address ``fd00:0:<leaf>:<port>::1``."""
    return str(ipaddress.IPv6Address(f"fd00:0:{leaf:x}:{port:x}::1"))


def nic_addr(leaf: int, port: int) -> str:
    """NIC (outer source) address ``fd00:1:<leaf>:<port>::1``."""
    return str(ipaddress.IPv6Address(f"fd00:1:{leaf:x}:{port:x}::1"))


# ---- the topology -------------------------------------------------------------


@dataclass(frozen=True, order=True)
class Node:
    """A fabric switch or a NIC. For a NIC, ``index`` is the host number."""

    plane: int
    tier: int
    index: int

    @property
    def name(self) -> str:
        kind = {LEAF: "leaf", SPINE: "spine", NIC: "nic"}[self.tier]
        return f"p{self.plane}-{kind}{self.index}"


@dataclass(frozen=True)
class Lpm:
    value: int
    prefix_len: int


@dataclass(frozen=True)
class Exact:
    value: int


@dataclass(frozen=True)
class Ternary:
    value: int
    mask: int


Match = Union[Lpm, Exact, Ternary]


@dataclass(frozen=True)
class Entry:
    """One table entry as the controller would write it (model names)."""

    table: str
    match: dict[str, Match]
    action: str
    params: dict[str, int] = field(default_factory=dict)
    priority: int | None = None


@dataclass(frozen=True)
class TinyFabric:
    planes: int = 1
    leaves: int = 2
    spines: int = 2
    hosts_per_leaf: int = 2

    # -- cabling

    def leaf_uplink_port(self, spine: int) -> int:
        return self.hosts_per_leaf + 1 + spine

    @staticmethod
    def spine_port(leaf: int) -> int:
        return 1 + leaf

    @staticmethod
    def nic_port(plane: int) -> int:
        return 1 + plane

    def host_index(self, leaf: int, port: int) -> int:
        return leaf * self.hosts_per_leaf + (port - 1)

    def host_of_index(self, index: int) -> tuple[int, int]:
        return index // self.hosts_per_leaf, index % self.hosts_per_leaf + 1

    def ports(self, node: Node) -> list[int]:
        if node.tier == LEAF:
            return list(range(1, self.hosts_per_leaf + 1)) + [
                self.leaf_uplink_port(j) for j in range(self.spines)
            ]
        if node.tier == SPINE:
            return [self.spine_port(i) for i in range(self.leaves)]
        return [self.nic_port(p) for p in range(self.planes)]

    def neighbour(self, node: Node, port: int) -> tuple[Node, int]:
        """The (node, port) at the other end of ``node``'s ``port``."""
        p = node.plane
        if node.tier == LEAF:
            if 1 <= port <= self.hosts_per_leaf:
                return Node(p, NIC, self.host_index(node.index, port)), self.nic_port(p)
            spine = port - self.hosts_per_leaf - 1
            if 0 <= spine < self.spines:
                return Node(p, SPINE, spine), self.spine_port(node.index)
        elif node.tier == SPINE:
            leaf = port - 1
            if 0 <= leaf < self.leaves:
                return Node(p, LEAF, leaf), self.leaf_uplink_port(node.index)
        elif node.tier == NIC:
            leaf, n = self.host_of_index(node.index)
            return Node(port - 1, LEAF, leaf), n
        raise ValueError(f"{node.name} has no port {port}")

    def port_mac(self, node: Node, port: int) -> str:
        return mac(node.plane, node.tier, node.index, port)

    def neighbour_mac(self, node: Node, port: int) -> str:
        other, other_port = self.neighbour(node, port)
        return self.port_mac(other, other_port)

    def switches(self) -> list[Node]:
        out = []
        for p in range(self.planes):
            out += [Node(p, LEAF, i) for i in range(self.leaves)]
            out += [Node(p, SPINE, j) for j in range(self.spines)]
        return out

    # -- carriers

    def carrier(self, plane: int, src_leaf: int, spine: int, dst_leaf: int, dst_port: int) -> str:
        """DA of the 2-tier path of docs/addressing.md."""
        if src_leaf == dst_leaf:
            usids = [usid(plane, LEAF, src_leaf), nic_usid(dst_port)]
        else:
            usids = [
                usid(plane, LEAF, src_leaf),
                usid(plane, SPINE, spine),
                usid(plane, LEAF, dst_leaf),
                nic_usid(dst_port),
            ]
        value = USID_BLOCK << 96
        for k, u in enumerate(usids):
            value |= u << (80 - 16 * k)
        return str(ipaddress.IPv6Address(value))

    # -- entries (the controller's job, per docs/fabric.md)

    def entries(self, node: Node, *, trim_threshold: int | None = None) -> list[Entry]:
        """Every entry the controller writes into fabric switch ``node``."""
        p = node.plane
        out: list[Entry] = [
            Entry("FabricIngress.my_sid", {"hdr.ipv6.dst_addr": Lpm(locator(usid(p, node.tier, node.index)), 48)},
                  "FabricIngress.usid_un"),
            Entry("FabricIngress.dscp_priority", {"hdr.ipv6.traffic_class": Ternary(TRIM_DSCP << 2, 0xFC)},
                  "FabricIngress.set_priority", {"prio": TRIM_PRIORITY}, priority=10),
        ]
        for port in self.ports(node):
            out.append(Entry("FabricEgress.port_mac", {"standard_metadata.egress_port": Exact(port)},
                             "FabricEgress.set_src_mac", {"mac": mac_int(self.port_mac(node, port))}))
            if trim_threshold is not None:
                out.append(Entry("FabricEgress.trim_config", {"standard_metadata.egress_port": Exact(port)},
                                 "FabricEgress.set_trim", {"threshold": trim_threshold, "dscp": TRIM_DSCP}))
        if node.tier == LEAF:
            for j in range(self.spines):
                port = self.leaf_uplink_port(j)
                nmac = mac_int(self.neighbour_mac(node, port))
                out.append(Entry("FabricIngress.usid_fwd", {"hdr.ipv6.dst_addr": Lpm(locator(usid(p, SPINE, j)), 48)},
                                 "FabricIngress.fwd", {"port": port, "dmac": nmac}))
                out.append(Entry("FabricIngress.usid_fwd", {"hdr.ipv6.dst_addr": Lpm(locator(ua_usid(port)), 48)},
                                 "FabricIngress.usid_ua", {"port": port, "dmac": nmac}))
            for n in range(1, self.hosts_per_leaf + 1):
                nmac = mac_int(self.neighbour_mac(node, n))
                out.append(Entry("FabricIngress.usid_fwd", {"hdr.ipv6.dst_addr": Lpm(locator(nic_usid(n)), 48)},
                                 "FabricIngress.fwd", {"port": n, "dmac": nmac}))
        else:
            for i in range(self.leaves):
                port = self.spine_port(i)
                nmac = mac_int(self.neighbour_mac(node, port))
                out.append(Entry("FabricIngress.usid_fwd", {"hdr.ipv6.dst_addr": Lpm(locator(usid(p, LEAF, i)), 48)},
                                 "FabricIngress.fwd", {"port": port, "dmac": nmac}))
                out.append(Entry("FabricIngress.usid_fwd", {"hdr.ipv6.dst_addr": Lpm(locator(ua_usid(port)), 48)},
                                 "FabricIngress.usid_ua", {"port": port, "dmac": nmac}))
        return out


# ---- installing and walking ------------------------------------------------------


def to_runtime_match(match: dict[str, Match]) -> dict[str, object]:
    """Convert this module's match values to ``p4target.runtime.entries`` ones."""
    from p4target.runtime import entries as rt

    out: dict[str, object] = {}
    for name, m in match.items():
        if isinstance(m, Lpm):
            out[name] = rt.Lpm(m.value, m.prefix_len)
        elif isinstance(m, Exact):
            out[name] = rt.Exact(m.value)
        else:
            out[name] = rt.Ternary(m.value, m.mask)
    return out


def install(sw: "Switch", entries: Iterable[Entry]) -> None:
    for e in entries:
        sw.table_add(e.table, to_runtime_match(e.match), e.action, dict(e.params), priority=e.priority)


def load_switch(seed: int = 1) -> "Switch":
    from p4target import Switch

    return Switch.load(str(FABRIC_P4), seed=seed)


def build(fab: TinyFabric, *, trim_threshold: int | None = None) -> dict[Node, "Switch"]:
    """One loaded and filled ``Switch`` per fabric switch of ``fab``."""
    out: dict[Node, Switch] = {}
    for node in fab.switches():
        sw = load_switch()
        install(sw, fab.entries(node, trim_threshold=trim_threshold))
        out[node] = sw
    return out


@dataclass(frozen=True)
class Hop:
    """A frame leaving ``node`` on ``port``."""

    node: Node
    port: int
    frame: bytes


def walk(fab: TinyFabric, switches: dict[Node, "Switch"], start: Node, port: int, frame: bytes,
         max_hops: int = 8) -> list[Hop]:
    """Inject ``frame`` into ``start`` on ``port`` and follow it switch to switch.

    Returns every hop until the frame reaches a NIC or is dropped. A switch that
    emits more than one frame is an error here (the fabric never replicates).
    """
    hops: list[Hop] = []
    node, in_port, data = start, port, frame
    for _ in range(max_hops):
        outputs = switches[node].inject(in_port, data)
        if not outputs:
            return hops
        if len(outputs) != 1:
            raise AssertionError(f"{node.name} emitted {len(outputs)} frames")
        out_port, data = outputs[0]
        hops.append(Hop(node, out_port, data))
        nxt, in_port = fab.neighbour(node, out_port)
        if nxt.tier == NIC:
            return hops
        node = nxt
    raise AssertionError("frame still in the fabric after max_hops")
