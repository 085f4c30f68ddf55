"""Address plan and table entries of one NIC, computed from docs/addressing.md.

Why here: the real controller comes later; the NIC tests (and the five-switch chain
test) need the entries it will write, computed as a pure function of the NIC's place
in a fabric. Nothing here knows what nic.p4 does to a packet: it only names tables,
actions and parameters (docs/nic.md) and the addresses of docs/addressing.md, so tests
build their expected packets independently with scapy.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass, field

from p4target.runtime.entries import Exact, Group, Lpm, Ternary
from tests.dataplane.packets import usid_carrier
from tests.dataplane.tiny_fabric import (
    LEAF,
    NIC,
    NIC_USID_BASE,
    SPINE,
    TRIM_DSCP,
    TinyFabric,
    host_addr,
    mac,
    mac_int,
    nic_addr,
    nic_usid,
    usid,
)

# ---- docs/addressing.md (the shared fixture's plan, plus what only NICs need) ----

LOCAL_USID_BASE = NIC_USID_BASE
TIER_NIC = NIC
TIER_HOST = 4  # host MACs: 02:00:04:<leaf>:<port>:01 (no switch uses tier 4)


def leaf_usid(plane: int, leaf: int) -> int:
    return usid(plane, LEAF, leaf)


def spine_usid(plane: int, spine: int) -> int:
    return usid(plane, SPINE, spine)


def local_usid(port: int) -> int:
    return nic_usid(port)


def gateway_addr(leaf: int, port: int) -> str:
    """The host's default gateway fd00:0:<leaf>:<port>::fe (answered by the NIC)."""
    return str(ipaddress.IPv6Address(f"fd00:0:{leaf:x}:{port:x}::fe"))


def path_carrier(plane: int, src_leaf: int, spine: int, dst_leaf: int, dst_port: int) -> str:
    """The 2-tier carrier fcbb:bb00:La:S:Lb:<0xE000+n>:: (La:<0xE000+n> on one leaf)."""
    if src_leaf == dst_leaf:
        return usid_carrier([leaf_usid(plane, src_leaf), local_usid(dst_port)])
    return usid_carrier([
        leaf_usid(plane, src_leaf),
        spine_usid(plane, spine),
        leaf_usid(plane, dst_leaf),
        local_usid(dst_port),
    ])


def generated_ev(plane: int, spine: int, entropy: int = 0) -> int:
    """GENERATED-mode EV: plane (15..13) | spine (12..5) | entropy (4..0)."""
    assert 0 <= plane < 8 and 0 <= spine < 256 and 0 <= entropy < 32
    return plane << 13 | spine << 5 | entropy


def ip_int(text: str) -> int:
    return int(ipaddress.IPv6Address(text))


# ---- NIC ports (tests/dataplane/tiny_fabric.py's cabling; host port 0) -------

NIC_HOST_PORT = 0


def nic_plane_port(plane: int) -> int:
    """NIC port of plane p: 1 + p, as tiny_fabric cables it."""
    return TinyFabric.nic_port(plane)


def host_mac(leaf: int, port: int) -> str:
    return f"02:00:{TIER_HOST:02x}:{leaf & 0xFF:02x}:{port & 0xFF:02x}:01"


# ---- entries -----------------------------------------------------------------


@dataclass(frozen=True)
class Fabric:
    """Shape of a small multiplane 2-tier fabric."""

    planes: int
    leaves: int
    spines: int
    hosts_per_leaf: int

    def hosts(self) -> list[tuple[int, int]]:
        """(leaf, leaf port) of every host; leaf ports are 1-based."""
        return [(l, n) for l in range(self.leaves) for n in range(1, self.hosts_per_leaf + 1)]

    def tiny(self) -> TinyFabric:
        """The same shape as the shared fixture's TinyFabric (cabling, MACs)."""
        return TinyFabric(self.planes, self.leaves, self.spines, self.hosts_per_leaf)

    def nic_port_mac(self, leaf: int, port: int, plane: int | None) -> str:
        """MAC of a NIC port: plane port of ``plane``, or (None) the host-facing port."""
        index = self.tiny().host_index(leaf, port)
        if plane is None:
            return mac(0, NIC, index, NIC_HOST_PORT)
        return mac(plane, NIC, index, nic_plane_port(plane))

    @staticmethod
    def leaf_port_mac(plane: int, leaf: int, port: int) -> str:
        return mac(plane, LEAF, leaf, port)


# The NIC tests' fabric: 4 planes x 4 spines, 16 paths between two leaves (issue 6).
TEST_FABRIC = Fabric(planes=4, leaves=3, spines=4, hosts_per_leaf=2)


@dataclass(frozen=True)
class ExplicitEv:
    """One EXPLICIT-mode EV: towards a destination host, over (plane, spine)."""

    ev: int
    dst_leaf: int
    dst_port: int
    plane: int
    spine: int


@dataclass
class NicConfig:
    """What the controller would write into one NIC."""

    fabric: Fabric
    leaf: int
    port: int
    trim_dscp: int = TRIM_DSCP
    spray_group: int = 1
    explicit: list[ExplicitEv] = field(default_factory=list)


def explicit_evs(fabric: Fabric, src_leaf: int, src_port: int, first_ev: int = 0x1000,
                 per_path: int = 1) -> list[ExplicitEv]:
    """An EV list: every (plane, spine) path towards every other host, ``per_path`` EVs
    each, numbered from ``first_ev`` (EXPLICIT EVs are arbitrary values)."""
    evs: list[ExplicitEv] = []
    ev = first_ev
    for dst_leaf, dst_port in fabric.hosts():
        if (dst_leaf, dst_port) == (src_leaf, src_port):
            continue
        for plane in range(fabric.planes):
            for spine in range(fabric.spines):
                for _ in range(per_path):
                    evs.append(ExplicitEv(ev, dst_leaf, dst_port, plane, spine))
                    ev += 1
    return evs


def member_id(plane: int, spine: int) -> int:
    return 1 + plane * 256 + spine


@dataclass(frozen=True)
class TableWrite:
    """One table entry: an action with params, or (``group``) a spray group."""

    table: str
    match: dict
    action: str | None = None
    params: dict = field(default_factory=dict)
    priority: int | None = None
    group: int | None = None


@dataclass(frozen=True)
class MemberWrite:
    """One action-profile member."""

    profile: str
    member_id: int
    action: str
    params: dict


@dataclass(frozen=True)
class GroupWrite:
    """One selector group: (member id, weight, watch port) per member."""

    profile: str
    group_id: int
    members: tuple[tuple[int, int, int | None], ...]


Write = TableWrite | MemberWrite | GroupWrite
SPRAY_PROFILE = "NicIngress.spray_selector"


def nic_writes(cfg: NicConfig, *, generated: bool = False, per_packet_mrc: bool = True,
               spray_members: Sequence[tuple[int, int]] | None = None) -> list[Write]:
    """Every write the controller makes into the NIC at (cfg.leaf, cfg.port), in order.

    ``generated`` selects the EV mode for all hosts; ``per_packet_mrc`` installs the
    traffic-class entry that sprays MRC traffic per packet (other traffic stays per
    flow). ``spray_members`` limits the spray group to some (plane, spine) paths.
    """
    fab = cfg.fabric
    leaf, port = cfg.leaf, cfg.port
    gw_mac = fab.nic_port_mac(leaf, port, None)
    out: list[Write] = [
        TableWrite("NicIngress.port_role", {"standard_metadata.ingress_port": Exact(NIC_HOST_PORT)},
                   "NicIngress.host_port",
                   {"nic_addr": ip_int(nic_addr(leaf, port)),
                    "gw_addr": ip_int(gateway_addr(leaf, port)),
                    "gw_mac": mac_int(gw_mac)}),
        TableWrite("NicEgress.egress_port", {"standard_metadata.egress_port": Exact(NIC_HOST_PORT)},
                   "NicEgress.to_host", {"src_mac": mac_int(gw_mac),
                                      "dst_mac": mac_int(host_mac(leaf, port))}),
    ]
    for plane in range(fab.planes):
        pport = nic_plane_port(plane)
        out += [
            TableWrite("NicIngress.port_role", {"standard_metadata.ingress_port": Exact(pport)},
                       "NicIngress.plane_port", {"plane": plane}),
            TableWrite("NicEgress.egress_port", {"standard_metadata.egress_port": Exact(pport)},
                       "NicEgress.to_plane",
                       {"plane": plane,
                        "src_mac": mac_int(fab.nic_port_mac(leaf, port, plane)),
                        "dst_mac": mac_int(fab.leaf_port_mac(plane, leaf, port))}),
            TableWrite("NicIngress.gen_plane", {"meta.plane": Exact(plane)}, "NicIngress.gen_params",
                       {"port": pport, "leaf_base": leaf_usid(plane, 0),
                        "spine_base": spine_usid(plane, 0), "leaf_count": fab.leaves,
                        "spine_count": fab.spines, "my_leaf": leaf}),
        ]
    out.append(TableWrite("NicIngress.my_sid",
                          {"hdr.ipv6.dst_addr": Lpm(ip_int(usid_carrier([local_usid(port)])), 48)},
                          "NicIngress.decap_to_host", {"port": NIC_HOST_PORT, "trim_dscp": cfg.trim_dscp}))
    hosts = Lpm(ip_int("fd00::"), 32)
    if generated:
        out.append(TableWrite("NicIngress.ev_mode", {"hdr.ipv6.dst_addr": hosts}, "NicIngress.mode_generated"))
    for e in cfg.explicit:
        out.append(TableWrite(
            "NicIngress.ev_table",
            {"hdr.ipv6.dst_addr": Lpm(ip_int(host_addr(e.dst_leaf, e.dst_port)) >> 64 << 64, 64),
             "meta.ev": Exact(e.ev)},
            "NicIngress.set_path",
            {"port": nic_plane_port(e.plane), "plane": e.plane,
             "carrier": ip_int(path_carrier(e.plane, leaf, e.spine, e.dst_leaf, e.dst_port))}))
    if per_packet_mrc:
        out.append(TableWrite("NicIngress.spray_mode", {"meta.is_mrc": Ternary(1, 1)},
                              "NicIngress.spray_per_packet", priority=10))
    members = list(spray_members) if spray_members is not None else [
        (p, s) for p in range(fab.planes) for s in range(fab.spines)]
    out += [MemberWrite(SPRAY_PROFILE, member_id(p, s), "NicIngress.set_generated",
                        {"plane": p, "spine": s}) for p, s in members]
    out.append(GroupWrite(SPRAY_PROFILE, cfg.spray_group,
                          tuple((member_id(p, s), 1, nic_plane_port(p)) for p, s in members)))
    out.append(TableWrite("NicIngress.spray", {"hdr.ipv6.dst_addr": hosts}, group=cfg.spray_group))
    return out


def apply_writes(sw, writes: Sequence[Write]) -> None:
    """Install ``writes`` through the p4target.Switch API."""
    for w in writes:
        if isinstance(w, MemberWrite):
            sw.act_prof_add_member(w.profile, w.member_id, w.action, w.params)
        elif isinstance(w, GroupWrite):
            sw.act_prof_add_group(w.profile, w.group_id, list(w.members))
        elif w.group is not None:
            sw.table_add(w.table, w.match, Group(w.group), priority=w.priority)
        else:
            sw.table_add(w.table, w.match, w.action, w.params, priority=w.priority)


def install_nic(sw, cfg: NicConfig, **options) -> None:
    """Write every table of nic.p4 for the NIC at (cfg.leaf, cfg.port) (see nic_writes)."""
    apply_writes(sw, nic_writes(cfg, **options))
