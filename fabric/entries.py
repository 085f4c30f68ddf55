"""Every table entry of every fabric switch and NIC, as values (no I/O).

Why values: the codec (controller/codec.py), the reconciler, ``mrcctl entries``,
the dataplane tests (through the embedded target's Switch API) and the benchmarks
all take the same entries, so they are computed once here, as a pure function of the
topology (and, for NICs, of the links that are down). Tables, actions and parameters
are named as in the P4Info (docs/fabric.md, docs/nic.md); match values are the
fabric's own ``Exact``/``Lpm``/``Ternary`` (fabric/match.py), which each writer encodes.

Speed matters (bench/controller_compute.py computes the 131,072-host fabric): per-switch loops build small
tuples; values that many switches share (spray members, trim settings, the NICs'
``gen_plane`` rows) are built once and reused.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Union

from fabric import plan as P
from fabric.match import Exact, Lpm, Ternary
from fabric.topology import Host, LinuxHost, Topology

MatchValue = Union[Exact, Lpm, Ternary]
Match = tuple[tuple[str, MatchValue], ...]
Params = tuple[tuple[str, int], ...]

FABRIC_PROGRAM = "fabric"
NIC_PROGRAM = "nic"
SPRAY_PROFILE = "NicIngress.spray_selector"
DSCP_PRIORITY_ENTRY_PRIORITY = 10
TRIM_CLASS_ENTRY_PRIORITY = 10
SPRAY_MODE_ENTRY_PRIORITY = 10
# ECN CE marking (FabricEgress.ecn_config): the egress queue depth, in packets, above
# which an ECN-capable packet leaves with CE, per port class. Both sit below the
# default trim threshold (32) so that senders see marks before trims. A fabric port
# (leaf uplink, spine downlink) marks early, at a quarter of it: spraying can move
# off a congested path, so an early signal costs little. A host port (leaf to NIC or
# Linux node) marks at half of it: the last hop of an incast has no other path, and
# the senders' congestion control keeps its queue near this depth.
ECN_THRESHOLD_FABRIC = 8
ECN_THRESHOLD_HOST = 16


@dataclass(frozen=True, slots=True)
class TableEntry:
    """One entry: ``action(params)``, or (``group``) a group of the table's selector."""

    table: str
    match: Match
    action: str | None
    params: Params = ()
    priority: int = 0
    group: int | None = None

    @property
    def key(self) -> tuple[object, ...]:
        return ("table", self.table, self.match, self.priority)


@dataclass(frozen=True, slots=True)
class MemberEntry:
    """One member of an action profile or selector."""

    profile: str
    member_id: int
    action: str
    params: Params

    @property
    def key(self) -> tuple[object, ...]:
        return ("member", self.profile, self.member_id)


@dataclass(frozen=True, slots=True)
class GroupEntry:
    """One selector group: ``(member_id, weight, watch_port)`` per member."""

    profile: str
    group_id: int
    members: tuple[tuple[int, int, int], ...]

    @property
    def key(self) -> tuple[object, ...]:
        return ("group", self.profile, self.group_id)


Entry = Union[TableEntry, MemberEntry, GroupEntry]


@dataclass(frozen=True)
class Node:
    """A switch of the fabric (leaf, spine) or a NIC, with what it runs."""

    name: str
    tier: int  # plan.LEAF, plan.SPINE, plan.NIC
    plane: int  # the NIC's: 0
    index: int  # leaf/spine index, or host index for a NIC
    ordinal: int  # position in the fabric's switch list (device ids, gRPC ports)

    @property
    def program(self) -> str:
        return NIC_PROGRAM if self.tier == P.NIC else FABRIC_PROGRAM


def nodes(topo: Topology) -> list[Node]:
    """Every P4 switch: leaves then spines of each plane, then one NIC per host."""
    out: list[Node] = []
    for p in range(topo.planes):
        out += [Node(topo.leaf_name(p, i), P.LEAF, p, i, 0) for i in range(len(topo.leaves))]
        out += [Node(topo.spine_name(p, j), P.SPINE, p, j, 0) for j in range(topo.spines)]
    out += [Node(h.nic, P.NIC, 0, h.index, 0) for h in topo.hosts]
    return [Node(n.name, n.tier, n.plane, n.index, k) for k, n in enumerate(out)]


def node(topo: Topology, name: str) -> Node:
    for n in nodes(topo):
        if n.name == name:
            return n
    raise KeyError(name)


# ---- fabric switches -----------------------------------------------------------


@lru_cache(maxsize=1 << 16)
def _lpm48(usid: int) -> Match:
    return (("hdr.ipv6.dst_addr", Lpm(P.locator(usid), 48)),)


@lru_cache(maxsize=4096)
def _port_key(port: int) -> Match:
    return (("standard_metadata.egress_port", Exact(port)),)


@lru_cache(maxsize=4096)
def _ecn_entry(port: int, threshold: int) -> TableEntry:
    return TableEntry("FabricEgress.ecn_config", _port_key(port), "FabricEgress.set_ecn", (("threshold", threshold),))


@lru_cache(maxsize=64)
def _trim_entry(port: int, threshold: int, dscp: int) -> TableEntry:
    return TableEntry("FabricEgress.trim_config", _port_key(port), "FabricEgress.set_trim",
                      (("threshold", threshold), ("dscp", dscp)))


def _dscp_key(dscp: int) -> Match:
    """The traffic class's DSCP bits, ECN bits masked out."""
    return (("hdr.ipv6.traffic_class", Ternary(dscp << 2, 0xFC)),)


def trimmed_dscps(topo: Topology) -> tuple[int, ...]:
    """The DSCPs ``FabricEgress.trim_class`` lets be trimmed: the topology's trimmed
    classes and the trim mark (a packet trimmed upstream is cut again to the same
    bytes, not left for ECN marking); none when the fabric does not trim."""
    if topo.trim_threshold is None:
        return ()
    return tuple(sorted({*topo.trim_classes, topo.trim_dscp}))


@lru_cache(maxsize=64)
def _trim_class_entries(dscps: tuple[int, ...]) -> tuple[TableEntry, ...]:
    return tuple(TableEntry("FabricEgress.trim_class", _dscp_key(d), "FabricEgress.set_trimmable", (),
                            TRIM_CLASS_ENTRY_PRIORITY) for d in dscps)


def _fabric_common(topo: Topology, usid: int, ports: Iterable[tuple[int, int, int]]) -> Iterator[TableEntry]:
    """my_sid, dscp_priority, trim_class, and per port (number, MAC, ECN threshold)
    port_mac, trim_config and ecn_config."""
    yield TableEntry("FabricIngress.my_sid", _lpm48(usid), "FabricIngress.usid_un")
    yield TableEntry("FabricIngress.dscp_priority", _dscp_key(topo.trim_dscp),
                     "FabricIngress.set_priority", (("prio", P.TRIM_PRIORITY),), DSCP_PRIORITY_ENTRY_PRIORITY)
    yield from _trim_class_entries(trimmed_dscps(topo))
    for port, port_mac, ecn in ports:
        yield TableEntry("FabricEgress.port_mac", _port_key(port), "FabricEgress.set_src_mac", (("mac", port_mac),))
        if topo.trim_threshold is not None:
            yield _trim_entry(port, topo.trim_threshold, topo.trim_dscp)
        yield _ecn_entry(port, ecn)


def leaf_entries(topo: Topology, plane: int, leaf: int) -> Iterator[TableEntry]:
    """Leaf ``leaf`` of ``plane``: uN for itself, usid_fwd to its spines (and uA on those
    links) and to its NICs' local uSIDs, port MACs, trimming, ECN marking."""
    hosts = topo.leaves[leaf].hosts
    first = topo.first_host(leaf)
    spines = list(topo.uplinks(plane, leaf))
    linux = topo.linux_on(plane, leaf) if topo.linux_hosts else []
    host, fab = ECN_THRESHOLD_HOST, ECN_THRESHOLD_FABRIC
    ports = [(n, P.mac(plane, P.LEAF, leaf, n), host) for n in range(1, hosts + 1)]
    ports += [(P.leaf_uplink_port(topo, s), P.mac(plane, P.LEAF, leaf, P.leaf_uplink_port(topo, s)), fab)
              for s in spines]
    ports += [(lx.port, P.mac(plane, P.LEAF, leaf, lx.port), host) for lx in linux]
    yield from _fabric_common(topo, P.leaf_usid(plane, leaf), ports)
    fwd, ua = "FabricIngress.fwd", "FabricIngress.usid_ua"
    for s in spines:
        port = P.leaf_uplink_port(topo, s)
        dmac = P.mac(plane, P.SPINE, s, P.spine_port(leaf))
        yield TableEntry("FabricIngress.usid_fwd", _lpm48(P.spine_usid(plane, s)), fwd, (("port", port), ("dmac", dmac)))
        yield TableEntry("FabricIngress.usid_fwd", _lpm48(P.ua_usid(port)), ua, (("port", port), ("dmac", dmac)))
    for n in range(1, hosts + 1):
        dmac = P.mac(plane, P.NIC, first + n - 1, P.nic_plane_port(plane))
        yield TableEntry("FabricIngress.usid_fwd", _lpm48(P.nic_usid(n)), fwd, (("port", n), ("dmac", dmac)))
    for lx in linux:  # a Linux SRv6 node: its local uSID, like a NIC's (it runs End.DT6 on it)
        yield TableEntry("FabricIngress.usid_fwd", _lpm48(P.nic_usid(lx.port)), fwd,
                         (("port", lx.port), ("dmac", P.linux_host_mac(topo, lx))))


def spine_entries(topo: Topology, plane: int, spine: int) -> Iterator[TableEntry]:
    """Spine ``spine`` of ``plane``: uN for itself, usid_fwd (and uA) to its leaves, port
    MACs, trimming, ECN marking (every spine port is a fabric port)."""
    leaves = list(topo.downlinks(plane, spine))
    ports = [(P.spine_port(i), P.mac(plane, P.SPINE, spine, P.spine_port(i)), ECN_THRESHOLD_FABRIC) for i in leaves]
    yield from _fabric_common(topo, P.spine_usid(plane, spine), ports)
    up = P.leaf_uplink_port(topo, spine)
    for i in leaves:
        port = P.spine_port(i)
        dmac = P.mac(plane, P.LEAF, i, up)
        params = (("port", port), ("dmac", dmac))
        yield TableEntry("FabricIngress.usid_fwd", _lpm48(P.leaf_usid(plane, i)), "FabricIngress.fwd", params)
        yield TableEntry("FabricIngress.usid_fwd", _lpm48(P.ua_usid(port)), "FabricIngress.usid_ua", params)


# ---- NICs ----------------------------------------------------------------------


def member_id(plane: int, spine: int) -> int:
    """Spray member of path (plane, spine): the same id in every NIC."""
    return 1 + plane * 256 + spine


@lru_cache(maxsize=8 * 256)
def _member(plane: int, spine: int) -> MemberEntry:
    return MemberEntry(SPRAY_PROFILE, member_id(plane, spine), "NicIngress.set_generated",
                       (("plane", plane), ("spine", spine)))


@lru_cache(maxsize=4096)
def _gen_plane(plane: int, leaves: int, spines: int, my_leaf: int) -> TableEntry:
    return TableEntry("NicIngress.gen_plane", (("meta.plane", Exact(plane)),), "NicIngress.gen_params",
                      (("port", P.nic_plane_port(plane)), ("leaf_base", P.leaf_usid(plane, 0)),
                       ("spine_base", P.spine_usid(plane, 0)), ("leaf_count", leaves),
                       ("spine_count", spines), ("my_leaf", my_leaf)))


_ALL_HOSTS: Match = (("hdr.ipv6.dst_addr", Lpm(int(P.HOST_PREFIX.network_address), 32)),)
_MY_SID_DECAP = "NicIngress.decap_to_host"


@lru_cache(maxsize=8192)
def _nic_my_sid(port: int, trim_dscp: int) -> TableEntry:
    return TableEntry("NicIngress.my_sid", (("hdr.ipv6.dst_addr", Lpm(P.carrier([P.nic_usid(port)]), 48)),),
                      _MY_SID_DECAP, (("port", P.NIC_HOST_PORT), ("trim_dscp", trim_dscp)))


_SPRAY_PER_PACKET = TableEntry("NicIngress.spray_mode", (("meta.is_mrc", Ternary(1, 1)),),
                               "NicIngress.spray_per_packet", (), SPRAY_MODE_ENTRY_PRIORITY)
_MODE_GENERATED = TableEntry("NicIngress.ev_mode", _ALL_HOSTS, "NicIngress.mode_generated")


def _path_alive(topo: Topology, dead: frozenset[tuple[int, int, int]], dead_nic: frozenset[tuple[int, int]],
                src: Host, dst: Host, plane: int, spine: int) -> bool:
    """Does path (plane, spine) from src to dst avoid every dead link?"""
    if (plane, src.index) in dead_nic or (plane, dst.index) in dead_nic:
        return False
    if src.leaf == dst.leaf:
        return True
    return ((plane, src.leaf, spine) not in dead and (plane, dst.leaf, spine) not in dead
            and topo.cabled(plane, src.leaf, spine) and topo.cabled(plane, dst.leaf, spine))


@dataclass(frozen=True)
class Failures:
    """Links that are down: leaf-spine cables (plane, leaf, spine) and NIC-leaf cables
    (plane, host index). Only NIC entries depend on them."""

    fabric: frozenset[tuple[int, int, int]] = frozenset()
    nic: frozenset[tuple[int, int]] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.fabric or self.nic)


NO_FAILURES = Failures()


def spray_groups(topo: Topology, src: Host, failures: Failures = NO_FAILURES
                 ) -> tuple[list[tuple[int, int]], list[tuple[int, int, tuple[tuple[int, int], ...]]]]:
    """The NIC's spray members and its (prefix, prefix length, member set) routes.

    Members: the (plane, spine) paths of the NIC's EV set. The route for every host
    (``fd00::/32``) uses the members whose links on the NIC's side are up; a
    destination leaf (/48) or host (/64) whose paths lose members (missing or dead
    cables at the far end) gets its own route with the members that still reach it.
    """
    base = sorted({(e.plane, e.spine) for e in P.nic_evs(topo, src)})
    dead, dead_nic = failures.fabric, failures.nic
    near = tuple(m for m in base if (m[0], src.index) not in dead_nic
                 and (m[0], src.leaf, m[1]) not in dead and topo.cabled(m[0], src.leaf, m[1]))
    routes: list[tuple[int, int, tuple[tuple[int, int], ...]]] = [(int(P.HOST_PREFIX.network_address), 32, near)]
    for lx in topo.linux_hosts:  # reached in its one plane only
        members = tuple(m for m in near if m[0] == lx.plane and (
            lx.leaf == src.leaf or (topo.cabled(m[0], lx.leaf, m[1]) and (m[0], lx.leaf, m[1]) not in failures.fabric)))
        routes.append((P.host_prefix(lx.leaf, lx.port), 64, members))
    if not (topo.missing or failures):
        return base, routes
    far_leaves = {lf for (_, lf, _) in topo.missing} | {lf for (_, lf, _) in dead}
    for leaf in sorted(far_leaves - {src.leaf}):
        members = tuple(m for m in near if topo.cabled(m[0], leaf, m[1]) and (m[0], leaf, m[1]) not in dead)
        if members != near:
            routes.append((P.leaf_prefix(leaf), 48, members))
    by_index = {h.index: h for h in topo.hosts}
    for host_index in sorted({h for (_, h) in dead_nic} - {src.index}):
        dst = by_index[host_index]
        leaf_members = next((m for pfx, plen, m in routes if plen == 48 and pfx == P.leaf_prefix(dst.leaf)), near)
        members = tuple(m for m in leaf_members if (m[0], host_index) not in dead_nic)
        if members != leaf_members:
            routes.append((P.host_prefix(dst.leaf, dst.port), 64, members))
    return base, routes


def nic_entries(topo: Topology, src: Host, failures: Failures = NO_FAILURES) -> list[Entry]:
    """Every write into ``src``'s NIC: ports, MACs, decap, EV mode and table, spraying."""
    leaf, port = src.leaf, src.port
    gw_mac = P.nic_gateway_mac(src)
    out: list[Entry] = [
        TableEntry("NicIngress.port_role", (("standard_metadata.ingress_port", Exact(P.NIC_HOST_PORT)),),
                   "NicIngress.host_port", (("nic_addr", P.nic_addr(leaf, port)),
                                            ("gw_addr", P.gateway_addr(leaf, port)), ("gw_mac", gw_mac))),
        TableEntry("NicEgress.egress_port", _port_key(P.NIC_HOST_PORT), "NicEgress.to_host",
                   (("src_mac", gw_mac), ("dst_mac", P.host_mac(src)))),
    ]
    for plane in range(topo.planes):
        pport = P.nic_plane_port(plane)
        out.append(TableEntry("NicIngress.port_role", (("standard_metadata.ingress_port", Exact(pport)),),
                              "NicIngress.plane_port", (("plane", plane),)))
        out.append(TableEntry("NicEgress.egress_port", _port_key(pport), "NicEgress.to_plane",
                              (("plane", plane), ("src_mac", P.nic_plane_mac(src, plane)),
                               ("dst_mac", P.mac(plane, P.LEAF, leaf, port)))))
        out.append(_gen_plane(plane, len(topo.leaves), topo.spines, leaf))
    out.append(_nic_my_sid(port, topo.trim_dscp))
    if topo.ev_mode == "generated":
        out.append(_MODE_GENERATED)
    else:
        out += explicit_ev_entries(topo, src, failures)
    out.append(_SPRAY_PER_PACKET)
    if not (failures or topo.missing):  # a whole Clos: NICs with the same EV window share it
        key = ("spray entries", P.spine_offset(topo, src))
        shared = topo.cache.get(key)
        if shared is None:
            shared = topo.cache[key] = tuple(_spray_entries(topo, src, failures))
        out += shared
    else:
        out += _spray_entries(topo, src, failures)
    return out


def _spray_entries(topo: Topology, src: Host, failures: Failures) -> list[Entry]:
    """The NIC's spray members, groups and ``NicIngress.spray`` routes."""
    out: list[Entry] = []
    base, routes = spray_groups(topo, src, failures)
    out += [_member(p, s) for p, s in base]
    groups: dict[tuple[tuple[int, int], ...], int] = {}
    for prefix, plen, members in routes:
        gid = groups.get(members)
        if gid is None:
            gid = groups[members] = len(groups) + 1
            out.append(GroupEntry(SPRAY_PROFILE, gid,
                                  tuple((member_id(p, s), 1, P.nic_plane_port(p)) for p, s in members)))
        out.append(TableEntry("NicIngress.spray", (("hdr.ipv6.dst_addr", Lpm(prefix, plen)),), None, group=gid))
    return out


def explicit_ev_entries(topo: Topology, src: Host, failures: Failures = NO_FAILURES) -> list[TableEntry]:
    """EXPLICIT mode: ``(destination /64, EV) -> set_path(plane port, plane, carrier)``
    for every other host and every EV of the NIC's set towards it, except those whose
    path crosses a dead link (their packets fall back to the NIC's spraying)."""
    out: list[TableEntry] = []
    destinations: list[Host | LinuxHost] = [*topo.hosts, *topo.linux_hosts]
    for dst in destinations:
        if dst is src:
            continue
        dst_key = Lpm(P.host_prefix(dst.leaf, dst.port), 64)
        for e in P.nic_evs(topo, src, dst):
            if failures and isinstance(dst, Host) and not _path_alive(topo, failures.fabric, failures.nic, src, dst,
                                                                      e.plane, e.spine):
                continue
            out.append(TableEntry(
                "NicIngress.ev_table", (("hdr.ipv6.dst_addr", dst_key), ("meta.ev", Exact(e.ev))),
                "NicIngress.set_path",
                (("port", P.nic_plane_port(e.plane)), ("plane", e.plane),
                 ("carrier", P.path_carrier(e.plane, src.leaf, e.spine, dst.leaf, dst.port)))))
    return out


# ---- the whole fabric ----------------------------------------------------------


def entries_of(topo: Topology, n: Node, failures: Failures = NO_FAILURES) -> list[Entry]:
    """Every entry of switch/NIC ``n``."""
    if n.tier == P.LEAF:
        return list(leaf_entries(topo, n.plane, n.index))
    if n.tier == P.SPINE:
        return list(spine_entries(topo, n.plane, n.index))
    return nic_entries(topo, topo.hosts[n.index], failures)
