"""The NIC's own spraying: per packet for MRC, per flow for other traffic, failover."""

from __future__ import annotations

from collections import Counter

from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether

from p4target.runtime.entries import Group, Lpm, Ternary
from tests.dataplane.nic.nic_frames import expected_fabric_frame, inner_of, mrc_frame, udp_frame
from tests.dataplane.packets import addr_int
from tests.dataplane.nic.nic_case import carrier_ip, host_ip, nic_plane_port

DST = (1, 2)
UNKNOWN_EV = 0xBEEF  # not in the EV list: sprayed by the NIC
DROP_NO_PATH = 8


_expected_cache: dict[tuple, dict[tuple[int, bytes], tuple[int, int]]] = {}


def expected_paths(cfg, frame_bytes: bytes, ev: int) -> dict[tuple[int, bytes], tuple[int, int]]:
    """Every (port, frame) the NIC may send for an MRC frame with EV ``ev`` -> (plane, spine)."""
    key = (cfg.topo.name, cfg.leaf, cfg.port, frame_bytes, ev)
    if key not in _expected_cache:
        tc = frame_bytes[14] << 4 & 0xF0 | frame_bytes[15] >> 4
        _expected_cache[key] = {
            (nic_plane_port(plane),
             expected_fabric_frame(cfg, plane, carrier_ip(plane, cfg.leaf, spine, *DST),
                                   frame_bytes[14:], flow_label=ev, traffic_class=tc)): (plane, spine)
            for plane in range(cfg.planes) for spine in range(cfg.spines)}
    return _expected_cache[key]


def path_of(sw, cfg, frame, ev: int | None = None) -> tuple[int, int]:
    """Send ``frame``; check the output is a valid encapsulation; return (plane, spine)."""
    data_in = bytes(frame)
    out = sw.inject(0, data_in)
    assert len(out) == 1, out
    if ev is not None:  # MRC: the whole frame is known for every path
        paths = expected_paths(cfg, data_in, ev)
        assert out[0] in paths, Ether(out[0][1]).show2(dump=True)
        return paths[out[0]]
    port, data = out[0]
    plane = port - 1
    assert 0 <= plane < cfg.planes
    outer = Ether(data)[IPv6]
    for spine in range(cfg.spines):
        carrier = carrier_ip(plane, cfg.leaf, spine, *DST)
        if outer.dst == carrier:
            # non-MRC: the flow label is the NIC's own flow hash
            assert data == expected_fabric_frame(cfg, plane, carrier, inner_of(frame),
                                                 flow_label=outer.fl, traffic_class=outer.tc)
            return plane, spine
    raise AssertionError(f"carrier {outer.dst} is no path of plane {plane} to {DST}")


def test_per_packet_spraying_uses_every_member_evenly(nic):
    sw, cfg = nic
    frame = mrc_frame(cfg, *DST, UNKNOWN_EV)
    used = Counter(path_of(sw, cfg, frame, UNKNOWN_EV) for _ in range(10_000))
    assert len(used) == 16  # 4 planes x 4 spines
    mean = 10_000 / 16
    assert max(used.values()) <= 1.10 * mean, used
    assert sw.counter_read("NicIngress.ev_tx", UNKNOWN_EV)[0] == 10_000


# The 16 ways from leaf 0 to leaf 1 port 2 (DST), written out by hand from
# docs/addressing.md: plane p leaves NIC port 1 + p with the carrier
# fcbb:bb00:<0x100 + 0x300 p>:<0x300 + 0x300 p + spine>:<0x101 + 0x300 p>:e002::.
SPRAY_CARRIERS = {
    (1, "fcbb:bb00:100:300:101:e002::"), (1, "fcbb:bb00:100:301:101:e002::"),
    (1, "fcbb:bb00:100:302:101:e002::"), (1, "fcbb:bb00:100:303:101:e002::"),
    (2, "fcbb:bb00:400:600:401:e002::"), (2, "fcbb:bb00:400:601:401:e002::"),
    (2, "fcbb:bb00:400:602:401:e002::"), (2, "fcbb:bb00:400:603:401:e002::"),
    (3, "fcbb:bb00:700:900:701:e002::"), (3, "fcbb:bb00:700:901:701:e002::"),
    (3, "fcbb:bb00:700:902:701:e002::"), (3, "fcbb:bb00:700:903:701:e002::"),
    (4, "fcbb:bb00:a00:c00:a01:e002::"), (4, "fcbb:bb00:a00:c01:a01:e002::"),
    (4, "fcbb:bb00:a00:c02:a01:e002::"), (4, "fcbb:bb00:a00:c03:a01:e002::"),
}


def test_spraying_reaches_exactly_the_carriers_written_by_hand(nic):
    sw, cfg = nic
    frame = bytes(mrc_frame(cfg, *DST, UNKNOWN_EV))
    seen = set()
    for _ in range(400):
        (port, data), = sw.inject(0, frame)
        seen.add((port, Ether(data)[IPv6].dst))
    assert seen == SPRAY_CARRIERS


def test_per_flow_spraying_keeps_a_flow_on_one_member_and_spreads_flows(nic):
    sw, cfg = nic
    frames = [udp_frame(cfg, *DST, sport=20000 + flow) for flow in range(1000)]
    first = [path_of(sw, cfg, f) for f in frames]
    # A second pass, interleaved with the other flows: every flow keeps its member.
    assert [path_of(sw, cfg, f) for f in frames] == first
    members = Counter(first)
    assert len(members) == 16
    assert max(members.values()) <= 1.25 * 1000 / 16, members


def test_spray_mode_is_configurable_per_traffic_class(nic):
    """The controller can make MRC per flow (and another class per packet)."""
    sw, cfg = nic
    sw.table_add("NicIngress.spray_mode",
                 {"meta.is_mrc": Ternary(1, 1), "hdr.ipv6.traffic_class": Ternary(0x68, 0xFC)},
                 "NicIngress.spray_per_flow", {}, priority=20)
    sw.table_add("NicIngress.spray_mode", {"hdr.ipv6.next_hdr": Ternary(17, 0xFF)},
                 "NicIngress.spray_per_packet", {}, priority=5)
    pinned = {path_of(sw, cfg, mrc_frame(cfg, *DST, UNKNOWN_EV, tc=0x68), UNKNOWN_EV)
              for _ in range(50)}
    assert len(pinned) == 1
    sprayed = {path_of(sw, cfg, mrc_frame(cfg, *DST, UNKNOWN_EV, tc=0x20), UNKNOWN_EV)
               for _ in range(200)}
    assert len(sprayed) == 16
    udp = {path_of(sw, cfg, udp_frame(cfg, *DST, sport=7)) for _ in range(200)}
    assert len(udp) == 16


def test_a_plane_port_going_down_is_skipped_at_once_and_used_again_when_up(nic):
    sw, cfg = nic
    frame = mrc_frame(cfg, *DST, UNKNOWN_EV)
    entries_before = {t: [repr(e) for e in sw.table_entries(t)]
                      for t in ("NicIngress.spray", "NicIngress.ev_table", "NicIngress.gen_plane")}
    dead = 2
    sw.set_port_status(nic_plane_port(dead), False)
    used = Counter(path_of(sw, cfg, frame, UNKNOWN_EV) for _ in range(1200))
    assert all(plane != dead for plane, _ in used)
    assert len(used) == 12
    assert max(used.values()) <= 1.25 * 1200 / 12
    # Per-flow traffic moves too: every flow lands on a live plane.
    for sport in range(100):
        assert path_of(sw, cfg, udp_frame(cfg, *DST, sport=sport))[0] != dead

    sw.set_port_status(nic_plane_port(dead), True)
    back = Counter(path_of(sw, cfg, frame, UNKNOWN_EV) for _ in range(800))
    assert len(back) == 16
    assert sum(n for (plane, _), n in back.items() if plane == dead) > 800 / 4 * 0.8
    assert entries_before == {t: [repr(e) for e in sw.table_entries(t)] for t in entries_before}


def test_all_planes_down_drops_and_counts(nic):
    sw, cfg = nic
    for plane in range(cfg.planes):
        sw.set_port_status(nic_plane_port(plane), False)
    assert sw.inject(0, bytes(mrc_frame(cfg, *DST, UNKNOWN_EV))) == []
    assert sw.inject(0, bytes(udp_frame(cfg, *DST, sport=9))) == []
    assert sw.counter_read("NicIngress.drops", DROP_NO_PATH)[0] == 2
    sw.set_port_status(nic_plane_port(3), True)
    assert path_of(sw, cfg, mrc_frame(cfg, *DST, UNKNOWN_EV), UNKNOWN_EV)[0] == 3


def test_a_destination_can_have_its_own_group_of_whole_carriers(nic):
    sw, cfg = nic
    carriers = {0: carrier_ip(0, cfg.leaf, 1, *DST), 3: carrier_ip(3, cfg.leaf, 2, *DST)}
    for plane, carrier in carriers.items():
        sw.act_prof_add_member("NicIngress.spray_selector", 5000 + plane, "NicIngress.set_path",
                               {"port": nic_plane_port(plane), "plane": plane, "carrier": addr_int(carrier)})
    sw.act_prof_add_group("NicIngress.spray_selector", 77,
                          [(5000 + p, 1, nic_plane_port(p)) for p in carriers])
    sw.table_add("NicIngress.spray", {"hdr.ipv6.dst_addr": Lpm(addr_int(host_ip(*DST)), 128)}, Group(77))
    frame = mrc_frame(cfg, *DST, UNKNOWN_EV)
    assert Counter(path_of(sw, cfg, frame, UNKNOWN_EV) for _ in range(20)) == {(0, 1): 10, (3, 2): 10}
    sw.set_port_status(nic_plane_port(3), False)
    assert {path_of(sw, cfg, frame, UNKNOWN_EV) for _ in range(6)} == {(0, 1)}


# 64 plain UDP flows from one host to one destination, differing only in the source
# port (consecutive: what a sender that numbers its flows uses). A hash that spreads
# them like a uniform random choice gives each of n members 64/n flows, with a
# standard deviation of sqrt(64 (1/n)(1 - 1/n)): 4 for n = 2, 2.6 for n = 8. The
# bounds below are about three of those: every member used; none above these.
SPREAD_SPORTS = range(42000, 42064)
SPREAD_BOUND = {2: (20, 44), 8: (1, 16)}  # members -> (fewest, most) flows on one member


def _members_per_flow(program, planes: int, spines: int) -> Counter:
    from fabric.topology import from_parameters
    from tests.dataplane.fabric_net import load
    from tests.dataplane.nic.nic_case import nic_case

    cfg = nic_case(from_parameters(name="spread", planes=planes, spines=spines, leaves=2, hosts_per_leaf=2,
                                   evs_per_nic=16), 0, 1)
    sw = load(program, cfg.entries())
    return Counter(path_of(sw, cfg, udp_frame(cfg, 1, 2, sport=s)) for s in SPREAD_SPORTS)


def _within(members: Counter, n: int) -> bool:
    low, high = SPREAD_BOUND[n]
    return len(members) == n and low <= min(members.values()) and max(members.values()) <= high


def test_per_flow_spraying_spreads_consecutive_source_ports_over_2_and_8_members():
    from tests.dataplane.fabric_net import NIC_P4

    for planes, spines in ((2, 1), (4, 2)):
        members = _members_per_flow(NIC_P4, planes, spines)
        assert _within(members, planes * spines), (planes, spines, members)


def test_the_spread_bound_catches_the_unmixed_crc(tmp_path):
    """The CRC alone as the selector key (its low bits are linear in the source port's
    bits) leaves members without flows: the bound above catches it."""
    from tests.dataplane.fabric_net import NIC_P4

    src = NIC_P4.read_text()
    start = src.index("    action spray_per_flow() {")
    end = src.index("    }", start) + len("    }")
    variant = tmp_path / "nic.p4"
    variant.write_text(src[:start] + "    action spray_per_flow() {\n        meta.spray_key = meta.flow_hash;\n    }"
                       + src[end:])
    if (NIC_P4.parent / "include").exists():
        (tmp_path / "include").symlink_to(NIC_P4.parent / "include")
    assert not _within(_members_per_flow(variant, 2, 1), 2)
    assert not _within(_members_per_flow(variant, 4, 2), 8)
