"""The fabric model's entries (fabric/entries.py): written out by hand for small fabrics, invariants on larger.

Why: fabric/entries.py decides every table of every switch and NIC. On a tiny
fabric every entry is written out here as literals (addresses, MACs, ports) from
docs/addressing.md, docs/fabric.md and docs/nic.md, so a wrong plan or a wrong entry
cannot pass on both sides. On a larger multiplane fabric the entries are checked by
walking every EV's carrier over the computed tables (a pure LPM walk with the uN/uA
semantics docs/fabric.md states) and by counting; and on a small multiplane fabric the
real fabric.p4/nic.p4 forward one frame per plane and host pair with these entries.
"""

from __future__ import annotations

import ipaddress
import textwrap
from collections import Counter, defaultdict
from dataclasses import dataclass

import pytest

from fabric import plan as P
from fabric.entries import (
    Failures,
    GroupEntry,
    MemberEntry,
    TableEntry,
    entries_of,
    leaf_entries,
    nic_entries,
    nodes,
    spine_entries,
)
from fabric.paths import failures_of, find_link, links, neighbour
from fabric.topology import Topology, from_parameters, load_file
from fabric.match import Exact, Lpm, Ternary


def lpm(text: str, plen: int) -> Lpm:
    return Lpm(int(ipaddress.IPv6Address(text)), plen)


def a(text: str) -> int:
    return int(ipaddress.IPv6Address(text))


DST = "hdr.ipv6.dst_addr"
EPORT = "standard_metadata.egress_port"
IPORT = "standard_metadata.ingress_port"


def table(name: str, match: tuple, action: str | None, params: tuple = (), priority: int = 0,
          group: int | None = None) -> TableEntry:
    return TableEntry(name, match, action, params, priority, group)


def same(got: list, want: list) -> None:
    """Same entries, none twice (the order of fabric entries does not matter)."""
    assert len(got) == len(set(got)), "an entry is written twice"
    missing, extra = set(want) - set(got), set(got) - set(want)
    assert not missing and not extra, f"missing {sorted(map(repr, missing))}\nextra {sorted(map(repr, extra))}"
    assert len(got) == len(want)


# ---- 1 plane, 2 leaves, 1 spine, 1 host per leaf, 2 EVs per NIC -------------------
# Cabling: leaf port 1 = its host's NIC, leaf port 2 = spine 0; spine port 1 + i = leaf i;
# NIC port 0 = host, port 1 = plane 0. MACs 02:<plane><tier>:<index 20 bits><port 12 bits>.

SMALL = from_parameters(name="small", planes=1, spines=1, leaves=2, hosts_per_leaf=1, evs_per_nic=2)
TRIM_DSCP_TC = (62 << 2, 0xFC)
COMMON_DSCP = table("FabricIngress.dscp_priority", (("hdr.ipv6.traffic_class", Ternary(*TRIM_DSCP_TC)),),
                    "FabricIngress.set_priority", (("prio", 7),), 10)


def trim_class(dscp: int) -> TableEntry:
    """Data of DSCP ``dscp`` may be trimmed: the DSCP bits of the traffic class, ECN masked."""
    return table("FabricEgress.trim_class", (("hdr.ipv6.traffic_class", Ternary(dscp << 2, 0xFC)),),
                 "FabricEgress.set_trimmable", (), 10)


# MRC-lite's class (DSCP 0) and the trim mark (62: a packet trimmed upstream is cut again)
TRIM_CLASSES = [trim_class(0), trim_class(62)]


def trim(port: int) -> TableEntry:
    return table("FabricEgress.trim_config", ((EPORT, Exact(port)),), "FabricEgress.set_trim",
                 (("threshold", 32), ("dscp", 62)))


def ecn(port: int, threshold: int) -> TableEntry:
    """CE above ``threshold`` packets: the documented defaults are 16 on a host port
    (leaf to NIC), 8 on a fabric port (leaf uplink, spine downlink)."""
    return table("FabricEgress.ecn_config", ((EPORT, Exact(port)),), "FabricEgress.set_ecn",
                 (("threshold", threshold),))


def port_mac(port: int, mac: int) -> TableEntry:
    return table("FabricEgress.port_mac", ((EPORT, Exact(port)),), "FabricEgress.set_src_mac", (("mac", mac),))


def usid_fwd(prefix: str, action: str, port: int, dmac: int) -> TableEntry:
    return table("FabricIngress.usid_fwd", ((DST, lpm(prefix, 48)),), f"FabricIngress.{action}",
                 (("port", port), ("dmac", dmac)))


def test_leaf_entries_of_the_small_fabric() -> None:
    want = [
        table("FabricIngress.my_sid", ((DST, lpm("fcbb:bb00:100::", 48)),), "FabricIngress.usid_un"),
        COMMON_DSCP, *TRIM_CLASSES,
        port_mac(1, 0x0201_0000_0001), trim(1), ecn(1, 16),  # h1's NIC: a host port
        port_mac(2, 0x0201_0000_0002), trim(2), ecn(2, 8),   # the uplink: a fabric port
        usid_fwd("fcbb:bb00:300::", "fwd", 2, 0x0202_0000_0001),      # spine 0, its port 1
        usid_fwd("fcbb:bb00:f002::", "usid_ua", 2, 0x0202_0000_0001),  # uA of port 2
        usid_fwd("fcbb:bb00:e001::", "fwd", 1, 0x0203_0000_0001),      # NIC of h1, its plane-0 port
    ]
    same(list(leaf_entries(SMALL, 0, 0)), want)


def test_trimmed_classes_are_the_topologys_and_none_without_trimming() -> None:
    other = from_parameters(name="small", planes=1, spines=1, leaves=2, hosts_per_leaf=1, evs_per_nic=2,
                            trim_classes=(26, 10))
    for got in (list(leaf_entries(other, 0, 0)), list(spine_entries(other, 0, 0))):
        assert [e for e in got if e.table == "FabricEgress.trim_class"] == [
            trim_class(10), trim_class(26), trim_class(62)]
    off = from_parameters(name="small", planes=1, spines=1, leaves=2, hosts_per_leaf=1, evs_per_nic=2, no_trim=True)
    assert not [e for e in leaf_entries(off, 0, 0) if e.table in ("FabricEgress.trim_class", "FabricEgress.trim_config")]


def test_second_leaf_entries_name_host_index_1() -> None:
    got = list(leaf_entries(SMALL, 0, 1))
    assert table("FabricIngress.my_sid", ((DST, lpm("fcbb:bb00:101::", 48)),), "FabricIngress.usid_un") in got
    assert port_mac(1, 0x0201_0000_1001) in got
    assert usid_fwd("fcbb:bb00:e001::", "fwd", 1, 0x0203_0000_1001) in got  # h2's NIC: host index 1


def test_spine_entries_of_the_small_fabric() -> None:
    want = [
        table("FabricIngress.my_sid", ((DST, lpm("fcbb:bb00:300::", 48)),), "FabricIngress.usid_un"),
        COMMON_DSCP, *TRIM_CLASSES,
        port_mac(1, 0x0202_0000_0001), trim(1), ecn(1, 8),  # spine ports are fabric ports
        port_mac(2, 0x0202_0000_0002), trim(2), ecn(2, 8),
        usid_fwd("fcbb:bb00:100::", "fwd", 1, 0x0201_0000_0002),      # leaf 0, its uplink port 2
        usid_fwd("fcbb:bb00:f001::", "usid_ua", 1, 0x0201_0000_0002),
        usid_fwd("fcbb:bb00:101::", "fwd", 2, 0x0201_0000_1002),      # leaf 1
        usid_fwd("fcbb:bb00:f002::", "usid_ua", 2, 0x0201_0000_1002),
    ]
    same(list(spine_entries(SMALL, 0, 0)), want)


def nic_common_h1() -> list:
    """Everything but the EV mode of h1's NIC (leaf 0, port 1, host index 0)."""
    return [
        table("NicIngress.port_role", ((IPORT, Exact(0)),), "NicIngress.host_port",
              (("nic_addr", a("fd00:1:0:1::1")), ("gw_addr", a("fd00:0:0:1::fe")), ("gw_mac", 0x0203_0000_0000))),
        table("NicEgress.egress_port", ((EPORT, Exact(0)),), "NicEgress.to_host",
              (("src_mac", 0x0203_0000_0000), ("dst_mac", 0x0204_0000_0000))),
        table("NicIngress.port_role", ((IPORT, Exact(1)),), "NicIngress.plane_port", (("plane", 0),)),
        table("NicEgress.egress_port", ((EPORT, Exact(1)),), "NicEgress.to_plane",
              (("plane", 0), ("src_mac", 0x0203_0000_0001), ("dst_mac", 0x0201_0000_0001))),
        table("NicIngress.gen_plane", (("meta.plane", Exact(0)),), "NicIngress.gen_params",
              (("port", 1), ("leaf_base", 0x0100), ("spine_base", 0x0300), ("leaf_count", 2), ("spine_count", 1),
               ("my_leaf", 0))),
        table("NicIngress.my_sid", ((DST, lpm("fcbb:bb00:e001::", 48)),), "NicIngress.decap_to_host",
              (("port", 0), ("trim_dscp", 62))),
        table("NicIngress.spray_mode", (("meta.is_mrc", Ternary(1, 1)),), "NicIngress.spray_per_packet", (), 10),
        MemberEntry("NicIngress.spray_selector", 1, "NicIngress.set_generated", (("plane", 0), ("spine", 0))),
        GroupEntry("NicIngress.spray_selector", 1, ((1, 1, 1),)),
        table("NicIngress.spray", ((DST, lpm("fd00::", 32)),), None, group=1),
    ]


def check_install_order(entries: list) -> None:
    """Members before the groups that list them, groups before the entries that use them."""
    seen_members, seen_groups = set(), set()
    for e in entries:
        if isinstance(e, MemberEntry):
            seen_members.add(e.member_id)
        elif isinstance(e, GroupEntry):
            assert {m for m, _, _ in e.members} <= seen_members
            seen_groups.add(e.group_id)
        elif e.group is not None:
            assert e.group in seen_groups


def test_nic_entries_of_the_small_fabric_explicit() -> None:
    h1 = SMALL.hosts[0]
    to_h2 = lambda ev: table(  # noqa: E731
        "NicIngress.ev_table", ((DST, lpm("fd00:0:1:1::", 64)), ("meta.ev", Exact(ev))), "NicIngress.set_path",
        (("port", 1), ("plane", 0), ("carrier", a("fcbb:bb00:100:300:101:e001::"))))
    got = nic_entries(SMALL, h1)
    same(got, nic_common_h1() + [to_h2(0x1000), to_h2(0x1001)])
    check_install_order(got)


def test_nic_entries_of_the_small_fabric_generated() -> None:
    gen = from_parameters(name="small", planes=1, spines=1, leaves=2, hosts_per_leaf=1, evs_per_nic=2,
                          ev_mode="generated")
    got = nic_entries(gen, gen.hosts[0])
    same(got, nic_common_h1() + [table("NicIngress.ev_mode", ((DST, lpm("fd00::", 32)),), "NicIngress.mode_generated")])
    check_install_order(got)


def test_nic_entries_after_a_fabric_link_fails() -> None:
    """1 plane, 2 spines: h1's EV 0x1001 uses spine 1; cable leaf 1 - spine 0 is down, so
    EV 0x1000 (spine 0) towards h2 goes, and leaf 1's hosts get a group without spine 0."""
    topo = from_parameters(name="two-spines", planes=1, spines=2, leaves=2, hosts_per_leaf=1, evs_per_nic=2)
    h1 = topo.hosts[0]
    down = failures_of({find_link(topo, "p0-leaf1:p0-spine0")})
    assert down == Failures(frozenset({(0, 1, 0)}))
    got = nic_entries(topo, h1, down)
    ev = [e for e in got if isinstance(e, TableEntry) and e.table == "NicIngress.ev_table"]
    assert ev == [table("NicIngress.ev_table", ((DST, lpm("fd00:0:1:1::", 64)), ("meta.ev", Exact(0x1001))),
                        "NicIngress.set_path",
                        (("port", 1), ("plane", 0), ("carrier", a("fcbb:bb00:100:301:101:e001::"))))]
    spray = [e for e in got if isinstance(e, (MemberEntry, GroupEntry))
             or (isinstance(e, TableEntry) and e.table == "NicIngress.spray")]
    assert spray == [
        MemberEntry("NicIngress.spray_selector", 1, "NicIngress.set_generated", (("plane", 0), ("spine", 0))),
        MemberEntry("NicIngress.spray_selector", 2, "NicIngress.set_generated", (("plane", 0), ("spine", 1))),
        GroupEntry("NicIngress.spray_selector", 1, ((1, 1, 1), (2, 1, 1))),
        table("NicIngress.spray", ((DST, lpm("fd00::", 32)),), None, group=1),
        GroupEntry("NicIngress.spray_selector", 2, ((2, 1, 1),)),
        table("NicIngress.spray", ((DST, lpm("fd00:0:1::", 48)),), None, group=2),
    ]
    # No fabric entry depends on the failure, and restoring gives back the full set.
    assert nic_entries(topo, h1) == nic_entries(topo, h1, Failures())


# ---- invariants on a larger multiplane fabric -------------------------------------


@dataclass
class Tables:
    """One switch's LPM tables as {prefix length: {prefix: entry}} plus its port MACs."""

    my_sid: dict[int, dict[int, TableEntry]]
    usid_fwd: dict[int, dict[int, TableEntry]]


def lpm_lookup(tbl: dict[int, dict[int, TableEntry]], addr: int) -> TableEntry | None:
    for plen in sorted(tbl, reverse=True):
        mask = ((1 << plen) - 1) << (128 - plen)
        hit = tbl[plen].get(addr & mask)
        if hit is not None:
            return hit
    return None


def shift(da: int) -> int:
    """uN/uA: DA = DA[127:96] ++ DA[79:0] ++ 16w0."""
    return (da & (0xFFFFFFFF << 96)) | ((da << 16) & ((1 << 96) - 1))


class Fabric:
    """Every switch's and NIC's computed entries, indexed for pure walks."""

    def __init__(self, topo: Topology, failures: Failures = Failures()) -> None:  # noqa: B008 — a frozen dataclass: one shared default is safe
        self.topo = topo
        self.nodes = {n.name: n for n in nodes(topo)}
        self.tables: dict[str, Tables] = {}
        self.entries: dict[str, list] = {}
        self.mac_owner: dict[int, tuple[str, int]] = {}  # MAC -> (switch, port)
        for name, n in self.nodes.items():
            es = entries_of(topo, n, failures)
            self.entries[name] = es
            t = Tables(defaultdict(dict), defaultdict(dict))
            for e in es:
                if not isinstance(e, TableEntry):
                    continue
                params = dict(e.params)
                if e.table in ("FabricIngress.my_sid", "FabricIngress.usid_fwd"):
                    (_, m), = e.match
                    target = t.my_sid if e.table.endswith("my_sid") else t.usid_fwd
                    assert m.value not in target[m.prefix_len], f"{name}: two {e.table} entries for one prefix"
                    target[m.prefix_len][m.value] = e
                elif e.table == "FabricEgress.port_mac":
                    self.own(params["mac"], name, dict(e.match)[EPORT].value)
                elif e.table == "NicEgress.egress_port":
                    self.own(params["src_mac"], name, dict(e.match)[EPORT].value)
            self.tables[name] = t

    def own(self, mac: int, name: str, port: int) -> None:
        assert mac not in self.mac_owner, f"{P.mac_text(mac)} is the MAC of {self.mac_owner[mac]} and {name}"
        self.mac_owner[mac] = (name, port)

    def walk(self, src_nic: str, out_port: int, carrier: int) -> tuple[str, int, int, list[tuple[str, int]]]:
        """Follow ``carrier`` from NIC ``src_nic`` leaving on ``out_port``: returns the NIC
        it reaches, its arrival port, the DA it arrives with and the (switch, port) hops."""
        nic_out = next(e for e in self.entries[src_nic] if isinstance(e, TableEntry)
                       and e.table == "NicEgress.egress_port" and dict(e.match)[EPORT].value == out_port)
        dmac = dict(nic_out.params)["dst_mac"]
        hops = [(src_nic, out_port)]
        name, port, da = src_nic, out_port, carrier
        for _ in range(8):
            nxt, nxt_port = self.mac_owner[dmac]
            # The neighbour the MAC names is the one the cabling puts there.
            other, other_port = neighbour(self.topo, self.nodes[name], port)
            assert (other.name, other_port) == (nxt, nxt_port), f"{name}:{port} dmac names {nxt}:{nxt_port}"
            name = nxt
            if self.nodes[name].tier == P.NIC:
                return name, nxt_port, da, hops
            t = self.tables[name]
            sid = lpm_lookup(t.my_sid, da)
            if sid is not None:
                assert sid.action == "FabricIngress.usid_un"
                assert da & ((1 << 80) - 1), f"carrier ends at {name}: not for transit"
                da = shift(da)
            fwd = lpm_lookup(t.usid_fwd, da)
            assert fwd is not None, f"{name}: no usid_fwd entry for {P.ip(da)}"
            if fwd.action == "FabricIngress.usid_ua":
                da = shift(da)
            params = dict(fwd.params)
            port, dmac = params["port"], params["dmac"]
            hops.append((name, port))
        raise AssertionError("carrier still in the fabric after 8 hops")


LARGE = from_parameters(name="large", planes=4, spines=4, leaves=8, hosts_per_leaf=4, evs_per_nic=8)


@pytest.fixture(scope="module")
def large() -> Fabric:
    return Fabric(LARGE)


def ev_entries(entries: list) -> list[TableEntry]:
    return [e for e in entries if isinstance(e, TableEntry) and e.table == "NicIngress.ev_table"]


def walk_every_ev(fab: Fabric, *, all_evs: bool = True) -> dict[str, set[int]]:
    """Walk every EV of every NIC towards every other host (``all_evs``: and check each
    NIC has its full EV set towards each); returns the planes seen per link."""
    topo = fab.topo
    link_of = {}
    for link in links(topo):
        link_of[(link.a, link.a_port)] = link.name
        link_of[(link.b, link.b_port)] = link.name
    planes_on: dict[str, set[int]] = defaultdict(set)
    by_prefix = {P.host_prefix(h.leaf, h.port): h for h in topo.hosts}
    for src in topo.hosts:
        walked: Counter = Counter()
        for e in ev_entries(fab.entries[src.nic]):
            match, params = dict(e.match), dict(e.params)
            dst = by_prefix[match[DST].value]
            assert match[DST].prefix_len == 64 and dst != src
            plane = params["plane"]
            assert params["port"] == 1 + plane
            nic, port, da, hops = fab.walk(src.nic, params["port"], params["carrier"])
            assert (nic, port) == (dst.nic, 1 + plane), f"{src.name} EV {match['meta.ev'].value:#x} -> {nic}"
            assert da == (0xFCBB_BB00 << 96) | ((0xE000 + dst.port) << 80)
            # The destination NIC decapsulates that DA.
            decap = next(x for x in fab.entries[dst.nic] if isinstance(x, TableEntry) and x.table == "NicIngress.my_sid")
            assert da >> 80 == dict(decap.match)[DST].value >> 80 and decap.action == "NicIngress.decap_to_host"
            for hop in hops:
                planes_on[link_of[hop]].add(plane)
            walked[dst.index] += 1
        if all_evs:
            assert walked == {h.index: topo.evs_per_nic for h in topo.hosts if h != src}
    return planes_on


def test_every_ev_of_every_host_pair_reaches_the_destination_nic(large: Fabric) -> None:
    planes_on = walk_every_ev(large)
    # Every link carries paths, and only of its own plane.
    for link in links(LARGE):
        assert planes_on[link.name] == {link.plane}, link.name
    assert len(planes_on) == len(links(LARGE)) == 4 * (8 * 4 + 32)


def test_evs_are_split_evenly_across_planes(large: Fabric) -> None:
    for src in LARGE.hosts:
        per_dst: dict[int, Counter] = defaultdict(Counter)
        for e in ev_entries(large.entries[src.nic]):
            per_dst[dict(e.match)[DST].value][dict(e.params)["plane"]] += 1
        for counts in per_dst.values():
            assert counts == {0: 2, 1: 2, 2: 2, 3: 2}
        # The spray members cover every plane, each plane's spines evenly.
        members = [e for e in large.entries[src.nic] if isinstance(e, MemberEntry)]
        per_plane = Counter(dict(m.params)["plane"] for m in members)
        assert per_plane == {0: 2, 1: 2, 2: 2, 3: 2}


@pytest.mark.parametrize("evs", [1, 3, 5, 13])
def test_uneven_ev_counts_differ_by_at_most_one_per_plane(evs: int) -> None:
    topo = from_parameters(planes=4, spines=4, leaves=2, hosts_per_leaf=1, evs_per_nic=evs)
    for src in topo.hosts:
        counts = Counter(e.plane for e in P.nic_evs(topo, src, topo.hosts[1 - src.index]))
        assert sum(counts.values()) == evs
        full = [counts.get(p, 0) for p in range(4)]
        assert max(full) - min(full) <= 1


def test_fabric_entries_are_per_switch_small(large: Fabric) -> None:
    """A leaf has 4 + 3 x ports + 2 x spines + hosts entries, a spine 4 + 3 x leaves + 2 x
    leaves (4: my_sid, dscp_priority, two trim_class; per port: port_mac, trim_config,
    ecn_config)."""
    for name, n in large.nodes.items():
        if n.tier == P.LEAF:
            assert len(large.entries[name]) == 4 + 3 * (4 + 4) + 2 * 4 + 4
        elif n.tier == P.SPINE:
            assert len(large.entries[name]) == 4 + 3 * 8 + 2 * 8


def test_a_graph_with_missing_cables_walks_around_them(tmp_path) -> None:
    path = tmp_path / "odd.yaml"
    path.write_text(textwrap.dedent("""\
        planes: 2
        evs_per_nic: 6
        graph:
          spines: [s0, s1, s2]
          leaves:
            - {name: a, hosts: 2, uplinks: [s0, {spine: s1, planes: [1]}, s2]}
            - {name: b, hosts: 1, uplinks: [s0, s1]}
            - {name: c, hosts: 3}
        """))
    topo = load_file(path)
    fab = Fabric(topo)
    planes_on = walk_every_ev(fab)
    used = set(planes_on)
    # Cables the graph leaves out are no links, and every link that exists is used.
    assert {link.name for link in links(topo)} == used
    assert "p0-a:p0-s1" not in used and "p1-a:p0-s1" not in used and "p0-b:p0-s2" not in used
    assert "p1-a:p1-s1" in used


def test_no_ev_entry_crosses_a_failed_link() -> None:
    dead = find_link(LARGE, "p2-leaf3:p2-spine1")
    fab = Fabric(LARGE, failures_of({dead}))
    planes_on = walk_every_ev(fab, all_evs=False)
    assert dead.name not in planes_on
    assert planes_on.keys() == {link.name for link in links(LARGE)} - {dead.name}


# ---- the real programs with these entries ---------------------------------------


@pytest.mark.parametrize("ev_mode", ["explicit", "generated"])
def test_fabric_p4_and_nic_p4_forward_host_to_host_in_every_plane(ev_mode: str) -> None:
    """The default fabric (4 planes x 2 leaves x 2 spines, 2 hosts per leaf) as
    p4target Switches filled with these entries: one frame per plane and host pair,
    host -> NIC -> leaf (-> spine -> leaf) -> NIC -> host."""
    from tests.dataplane.fabric_net import build, walk
    from tests.dataplane.nic.nic_case import nic_case
    from tests.dataplane.nic.nic_frames import host_delivery, mrc_frame

    topo = from_parameters(name="default", planes=4, spines=2, leaves=2, hosts_per_leaf=2, evs_per_nic=8,
                           ev_mode=ev_mode)
    switches = build(topo, nics=True)
    delivered = 0
    for src in topo.hosts:
        cfg = nic_case(topo, src.leaf, src.port)
        for dst in topo.hosts:
            if dst == src:
                continue
            for plane in range(4):
                ev = next(e for e in P.nic_evs(topo, src, dst) if e.plane == plane)
                frame = bytes(mrc_frame(cfg, dst.leaf, dst.port, ev.ev, psn=plane))
                hops = walk(topo, switches, src.nic, 0, frame)
                fabric = [f"p{plane}-leaf{src.leaf}"] if src.leaf == dst.leaf else [
                    f"p{plane}-leaf{src.leaf}", f"p{plane}-spine{ev.spine}", f"p{plane}-leaf{dst.leaf}"]
                assert [h.node for h in hops] == [src.nic] + fabric + [dst.nic]
                assert hops[0].port == 1 + plane
                assert (hops[-1].to, hops[-1].to_port) == (dst.name, 0)
                assert hops[-1].frame == host_delivery(nic_case(topo, dst.leaf, dst.port), frame[14:])
                delivered += 1
    assert delivered == 4 * 3 * 4
