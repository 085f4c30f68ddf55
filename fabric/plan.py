"""The address plan: uSIDs, addresses, MACs, cabling and EVs (docs/addressing.md).

Why one module: every part of the project (the controller's entries, the Mininet
network, the endpoints' EV sets, the dataplane tests) must agree on these numbers, so
they are computed here and nowhere else. Everything is a pure function of a position
(plane, tier, index, port) and refuses positions outside its range, so a wrong index
fails loudly instead of silently colliding with another switch's uSID.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from fabric.topology import MAX_EVS, MAX_HOSTS_PER_LEAF, MAX_LEAVES, MAX_PLANES, MAX_SPINES, Host, LinuxHost, Topology

USID_BLOCK = 0xFCBB_BB00
LEAF, SPINE, NIC, HOST = 1, 2, 3, 4  # tiers, as in the MACs
TIER_NAMES = {LEAF: "leaf", SPINE: "spine", NIC: "nic", HOST: "host"}
NIC_USID_BASE = 0xE000  # local uSID of the NIC on leaf port n: 0xE000 + n
UA_BASE = 0xF000  # local uA uSID of a switch's port q: 0xF000 + q
TRIM_PRIORITY = 7
EXPLICIT_EV_BASE = 0x1000  # EXPLICIT EVs are 0x1000 + k (any 16-bit value would do)
NIC_HOST_PORT = 0
MAX_PORT = 4095  # leaf ports of NICs and uA ports: 12 bits
V1MODEL_MAX_PORT = 510  # v1model ports are 9 bits and 511 is the drop port
HOST_PREFIX = ipaddress.IPv6Network("fd00::/32")  # fd00:0:<leaf>:<port>::/64
NIC_PREFIX = ipaddress.IPv6Network("fd00:1::/32")


class PlanError(ValueError):
    """A position outside the address plan."""


def _check(value: int, low: int, high: int, what: str) -> None:
    if not low <= value <= high:
        raise PlanError(f"{what} {value} is outside the address plan ({low}..{high})")


# ---- uSIDs ---------------------------------------------------------------------


def leaf_usid(plane: int, leaf: int) -> int:
    """Global uSID of leaf ``leaf`` of ``plane``: 0x0100 + plane * 0x0300 + leaf."""
    _check(plane, 0, MAX_PLANES - 1, "plane")
    _check(leaf, 0, MAX_LEAVES - 1, "leaf")
    return 0x0100 + plane * 0x0300 + leaf


def spine_usid(plane: int, spine: int) -> int:
    """Global uSID of spine ``spine`` of ``plane``: 0x0100 + plane * 0x0300 + 0x0200 + spine."""
    _check(plane, 0, MAX_PLANES - 1, "plane")
    _check(spine, 0, MAX_SPINES - 1, "spine")
    return 0x0300 + plane * 0x0300 + spine


def nic_usid(port: int) -> int:
    """Local uSID of the NIC on leaf port ``port`` (1..4095)."""
    _check(port, 1, MAX_HOSTS_PER_LEAF, "leaf port of a NIC")
    return NIC_USID_BASE + port


def ua_usid(port: int) -> int:
    """Local uA uSID of a switch's port ``port`` (1..4095)."""
    _check(port, 1, MAX_PORT, "uA port")
    return UA_BASE + port


def locator(usid: int) -> int:
    """``fcbb:bb00:<usid>::`` as an integer: the /48 a switch owns."""
    _check(usid, 1, 0xFFFF, "uSID")
    return (USID_BLOCK << 96) | (usid << 80)


def carrier(usids: list[int] | tuple[int, ...]) -> int:
    """The uSID carrier ``fcbb:bb00:<u1>:<u2>:...::`` (at most 6 uSIDs) as an integer."""
    if not 1 <= len(usids) <= 6:
        raise PlanError(f"a carrier holds 1..6 uSIDs, not {len(usids)}")
    value = USID_BLOCK << 96
    for k, u in enumerate(usids):
        _check(u, 1, 0xFFFF, "uSID")
        value |= u << (80 - 16 * k)
    return value


def path_carrier(plane: int, src_leaf: int, spine: int | None, dst_leaf: int, dst_port: int) -> int:
    """DA of the 2-tier path: ``La:S:Lb:<0xE000+n>``, or ``La:<0xE000+n>`` on one leaf."""
    if src_leaf == dst_leaf:
        return carrier([leaf_usid(plane, src_leaf), nic_usid(dst_port)])
    if spine is None:
        raise PlanError("a path between two leaves needs a spine")
    return carrier([leaf_usid(plane, src_leaf), spine_usid(plane, spine), leaf_usid(plane, dst_leaf),
                    nic_usid(dst_port)])


# ---- addresses -----------------------------------------------------------------


def host_addr(leaf: int, port: int) -> int:
    """Inner (host) address ``fd00:0:<leaf>:<port>::1``."""
    _check(leaf, 0, MAX_LEAVES - 1, "leaf")
    _check(port, 1, MAX_HOSTS_PER_LEAF, "leaf port")
    return (0xFD00_0000 << 96) | (leaf << 80) | (port << 64) | 1


def host_prefix(leaf: int, port: int) -> int:
    """The host's /64 ``fd00:0:<leaf>:<port>::``."""
    return host_addr(leaf, port) - 1


def leaf_prefix(leaf: int) -> int:
    """The /48 ``fd00:0:<leaf>::`` of every host behind ``leaf``."""
    _check(leaf, 0, MAX_LEAVES - 1, "leaf")
    return (0xFD00_0000 << 96) | (leaf << 80)


def gateway_addr(leaf: int, port: int) -> int:
    """The host's default gateway ``fd00:0:<leaf>:<port>::fe`` (answered by its NIC)."""
    return host_prefix(leaf, port) | 0xFE


def nic_addr(leaf: int, port: int) -> int:
    """NIC (outer source) address ``fd00:1:<leaf>:<port>::1``."""
    _check(leaf, 0, MAX_LEAVES - 1, "leaf")
    _check(port, 1, MAX_HOSTS_PER_LEAF, "leaf port")
    return (0xFD00_0001 << 96) | (leaf << 80) | (port << 64) | 1


def ip(value: int) -> str:
    """An integer address in the usual text form."""
    return str(ipaddress.IPv6Address(value))


# ---- MACs ----------------------------------------------------------------------


def mac(plane: int, tier: int, index: int, port: int) -> int:
    """The MAC of a port: ``02`` (locally administered), plane (4 bits), tier (4 bits),
    index (20 bits: switch index, or host index for NICs and hosts), port (12 bits)."""
    _check(plane, 0, MAX_PLANES - 1, "plane")
    _check(tier, LEAF, HOST, "tier")
    _check(index, 0, (1 << 20) - 1, "index")
    _check(port, 0, MAX_PORT, "port")
    return (0x02 << 40) | (plane << 36) | (tier << 32) | (index << 12) | port


def mac_text(value: int) -> str:
    return ":".join(f"{(value >> s) & 0xFF:02x}" for s in range(40, -1, -8))


def host_mac(host: Host) -> int:
    return mac(0, HOST, host.index, 0)


def nic_gateway_mac(host: Host) -> int:
    """MAC of the NIC's host port (the gateway the host sees)."""
    return mac(0, NIC, host.index, NIC_HOST_PORT)


def linux_host_mac(topo: Topology, lx: LinuxHost) -> int:
    """MAC of a Linux SRv6 node's interface (host tier, indices after the fabric's hosts)."""
    return mac(lx.plane, HOST, len(topo.hosts) + lx.index, lx.port)


def nic_plane_mac(host: Host, plane: int) -> int:
    return mac(plane, NIC, host.index, nic_plane_port(plane))


# ---- cabling (port numbers) ----------------------------------------------------


def leaf_host_port(host: Host) -> int:
    """Leaf port of a host's NIC: the host's position on its leaf (1-based)."""
    return host.port


def leaf_uplink_port(topo: Topology, spine: int) -> int:
    """Leaf port to spine ``spine``: after the widest leaf's host ports."""
    return topo.max_hosts_per_leaf + 1 + spine


def spine_port(leaf: int) -> int:
    """Spine port to leaf ``leaf``."""
    return 1 + leaf


def nic_plane_port(plane: int) -> int:
    """NIC port of plane ``plane`` (the host is on port 0)."""
    _check(plane, 0, MAX_PLANES - 1, "plane")
    return 1 + plane


def highest_port(topo: Topology) -> tuple[str, int]:
    """The switch with the highest port number and that number (v1model limits it)."""
    leaf_top = max([leaf_uplink_port(topo, topo.spines - 1)] + [lx.port for lx in topo.linux_hosts])
    spine_top = spine_port(len(topo.leaves) - 1)
    return ("leaf", leaf_top) if leaf_top >= spine_top else ("spine", spine_top)


def v1model_port_problem(topo: Topology) -> str | None:
    """Why the topology's switches do not fit v1model's 9-bit ports, or None."""
    tier, top = highest_port(topo)
    if top <= V1MODEL_MAX_PORT:
        return None
    return (f"topology {topo.name!r}: a {tier} needs port {top}, but v1model ports are 9 bits (1..{V1MODEL_MAX_PORT}); "
            "use fewer hosts per leaf plus spines, or fewer leaves, for a P4 network (the plan itself has no such limit)")


# ---- entropy values ------------------------------------------------------------


def generated_ev(plane: int, spine: int, entropy: int = 0) -> int:
    """GENERATED-mode EV: plane (bits 15..13) | spine (12..5) | entropy (4..0)."""
    _check(plane, 0, MAX_PLANES - 1, "plane")
    _check(spine, 0, MAX_SPINES - 1, "spine")
    _check(entropy, 0, 31, "entropy")
    return plane << 13 | spine << 5 | entropy


def explicit_ev(k: int) -> int:
    _check(k, 0, MAX_EVS - 1, "EV number")
    return EXPLICIT_EV_BASE + k


@dataclass(frozen=True, slots=True)
class EvPath:
    """EV ``ev`` of a NIC: plane ``plane`` through spine ``spine``."""

    ev: int
    plane: int
    spine: int


def spine_offset(topo: Topology, host: Host) -> int:
    """Where a NIC's EVs start among the spines: hosts start at different spines so a
    large fabric's NICs do not all spray over spines 0..K/P."""
    per_plane = -(-topo.evs_per_nic // topo.planes)
    return (host.index * per_plane) % topo.spines


def _live_spines(topo: Topology, plane: int, src_leaf: int, dst_leaf: int | None,
                 dead: frozenset[tuple[int, int, int]] = frozenset()) -> list[int]:
    if dst_leaf == src_leaf or not (topo.missing or dead):
        # Same leaf (the spine is not on the path) or a whole Clos: every spine.
        key = ("all spines",)
        if key not in topo.cache:
            topo.cache[key] = list(range(topo.spines))
        every: list[int] = topo.cache[key]
        return every
    out = []
    for s in topo.uplinks(plane, src_leaf):
        if (plane, src_leaf, s) in dead:
            continue
        if dst_leaf is not None and (not topo.cabled(plane, dst_leaf, s) or (plane, dst_leaf, s) in dead):
            continue
        out.append(s)
    return out


def nic_evs(topo: Topology, src: Host, dst: Host | LinuxHost | None = None) -> list[EvPath]:
    """The EV set of ``src``'s NIC (towards ``dst``; None: any destination).

    K = ``topo.evs_per_nic`` EVs, EV k on plane ``k mod P`` (planes split evenly:
    counts differ by at most one), its spine rotating over the spines that reach the
    destination in that plane. EXPLICIT EVs are ``0x1000 + k``; GENERATED EVs encode
    plane, spine and an entropy count from 1 (docs/addressing.md). Planes with no path
    between the two leaves (an explicit graph) are left out, and a Linux SRv6 node is
    reached in its one plane only.
    """
    dst_leaf = dst.leaf if dst is not None else None
    only = dst.plane if isinstance(dst, LinuxHost) else None
    offset = spine_offset(topo, src)
    key = ("nic_evs", offset, src.leaf if topo.missing else None, dst_leaf if topo.missing else None, only)
    cached = topo.cache.get(key)
    if cached is None:
        cached = topo.cache[key] = _nic_evs(topo, src, dst_leaf, offset, only)
    return list(cached)


def _nic_evs(topo: Topology, src: Host, dst_leaf: int | None, offset: int, only: int | None) -> tuple[EvPath, ...]:
    spines_of = {p: _live_spines(topo, p, src.leaf, dst_leaf) for p in range(topo.planes)}
    planes = [p for p in range(topo.planes) if spines_of[p] and only in (None, p)]
    if not planes:
        return ()
    out: list[EvPath] = []
    uses: dict[tuple[int, int], int] = {}
    for k in range(topo.evs_per_nic):
        p = planes[k % len(planes)]
        live = spines_of[p]
        s = live[(offset + k // len(planes)) % len(live)]
        if topo.ev_mode == "generated":
            n = uses.get((p, s), 0) + 1
            uses[(p, s)] = n
            if n > 31:  # entropy 1..31: no EV is 0
                continue
            ev = generated_ev(p, s, n)
        else:
            ev = explicit_ev(k)
        out.append(EvPath(ev, p, s))
    return tuple(out)
