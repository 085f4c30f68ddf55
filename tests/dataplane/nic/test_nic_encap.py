"""Host -> fabric in EXPLICIT and GENERATED mode: the outer header, byte for byte."""

from __future__ import annotations

from collections import Counter

import pytest
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether

from p4target.runtime.entries import Lpm
from tests.dataplane.nic.nic_frames import (
    expected_fabric_frame,
    inner_of,
    mrc_frame,
    udp_frame,
)
from fabric.plan import generated_ev
from tests.dataplane.packets import addr_int
from tests.dataplane.nic.nic_case import carrier_ip, host_ip, nic_plane_port
from tests.dataplane.packets import usid_carrier

DROP_GEN_BAD_EV = 9
DROP_GEN_BAD_DST = 10


def test_every_explicit_ev_leaves_on_its_plane_with_the_expected_outer_header(nic):
    sw, cfg = nic
    assert len(cfg.explicit) == 5 * 16  # 5 other hosts x 16 EVs, one per (plane, spine)
    assert {(e.plane, e.spine) for e in cfg.explicit} == {(p, s) for p in range(4) for s in range(4)}
    sent: Counter = Counter()
    sent_bytes: Counter = Counter()
    for e in cfg.explicit:
        frame = mrc_frame(cfg, e.dst_leaf, e.dst_port, e.ev, psn=e.ev)
        out = sw.inject(0, bytes(frame))
        carrier = carrier_ip(e.plane, cfg.leaf, e.spine, e.dst_leaf, e.dst_port)
        want = expected_fabric_frame(cfg, e.plane, carrier, inner_of(frame),
                                     flow_label=e.ev, traffic_class=0x68)
        assert out == [(nic_plane_port(e.plane), want)], f"EV {e.ev:#x}"
        sent[e.ev] += 1
        sent_bytes[e.ev] += len(bytes(frame))
    for ev in sent:  # every EV serves every destination
        assert sw.counter_read("NicIngress.ev_tx", ev) == (5, sent_bytes[ev])
    for plane in range(cfg.planes):
        packets, _ = sw.counter_read("NicEgress.plane_tx", plane)
        assert packets == sum(1 for e in cfg.explicit if e.plane == plane)


@pytest.mark.parametrize("ev,dst,plane,carrier", [
    # Written out by hand from docs/addressing.md: EV 0x1000 + k is on plane k mod 4 via
    # spine k div 4; leaf i of plane p is 0x100 + 0x300 p + i, spine j is 0x300 + 0x300 p + j.
    (0x1000, (1, 1), 0, "fcbb:bb00:100:300:101:e001::"),
    (0x1005, (2, 2), 1, "fcbb:bb00:400:601:402:e002::"),
    (0x100F, (2, 2), 3, "fcbb:bb00:a00:c03:a02:e002::"),
    (0x100E, (0, 2), 2, "fcbb:bb00:700:e002::"),
])
def test_explicit_evs_carry_the_carriers_written_by_hand(nic, ev, dst, plane, carrier):
    sw, cfg = nic
    frame = mrc_frame(cfg, *dst, ev)
    out = sw.inject(0, bytes(frame))
    assert out == [(1 + plane, expected_fabric_frame(cfg, plane, carrier, inner_of(frame),
                                                     flow_label=ev, traffic_class=0x68))]


def test_same_leaf_destination_gets_the_short_carrier(nic):
    sw, cfg = nic
    e = next(e for e in cfg.explicit if e.dst_leaf == cfg.leaf)
    frame = mrc_frame(cfg, e.dst_leaf, e.dst_port, e.ev)
    out = sw.inject(0, bytes(frame))
    carrier = f"fcbb:bb00:{0x100 + e.plane * 0x300 + cfg.leaf:x}:{0xE000 + e.dst_port:x}::"
    assert out == [(nic_plane_port(e.plane),
                    expected_fabric_frame(cfg, e.plane, carrier, inner_of(frame),
                                          flow_label=e.ev, traffic_class=0x68))]


def test_explicit_path_longer_than_one_carrier_gets_an_srh(nic):
    sw, cfg = nic
    # A detour: leaf 0 -> spine 1 -> leaf 2 -> spine 3 -> leaf 1 -> NIC 2, plane 1.
    first = usid_carrier([0x401, 0x601, 0x403, 0x603])
    second = usid_carrier([0x402, 0xE002])
    ev = 0x7777
    sw.table_add("NicIngress.ev_table",
                 {"hdr.ipv6.dst_addr": Lpm(addr_int(host_ip(1, 2)), 128), "meta.ev": ev},
                 "NicIngress.set_path_srh",
                 {"port": nic_plane_port(1), "plane": 1, "carrier": addr_int(first),
                  "next_carrier": addr_int(second)})
    frame = mrc_frame(cfg, 1, 2, ev)
    out = sw.inject(0, bytes(frame))
    assert out == [(nic_plane_port(1),
                    expected_fabric_frame(cfg, 1, first, inner_of(frame), flow_label=ev,
                                          traffic_class=0x68, next_carrier=second))]


def test_explicit_ev_is_per_destination(nic):
    """An EV listed for host B is not B's path when the packet goes to host C."""
    sw, cfg = nic
    e = next(e for e in cfg.explicit if (e.dst_leaf, e.dst_port) == (1, 1))
    frame = mrc_frame(cfg, 2, 2, e.ev)
    [(port, data)] = sw.inject(0, bytes(frame))
    plane = port - 1
    # Sprayed instead: a carrier towards (2, 2) on the plane it left on.
    carriers = {carrier_ip(plane, cfg.leaf, s, 2, 2) for s in range(cfg.spines)}
    outs = {expected_fabric_frame(cfg, plane, c, inner_of(frame), flow_label=e.ev,
                                  traffic_class=0x68) for c in carriers}
    assert data in outs


GENERATED_SAMPLE = [
    # (plane, spine, entropy, dst_leaf, dst_port)
    (0, 0, 0, 1, 1), (0, 3, 31, 2, 2), (1, 1, 7, 1, 2), (2, 2, 12, 2, 1),
    (3, 3, 1, 1, 1), (3, 0, 30, 0, 2), (1, 2, 5, 0, 2), (2, 1, 0, 2, 2),
]


@pytest.mark.parametrize("plane,spine,entropy,dst_leaf,dst_port", GENERATED_SAMPLE)
def test_generated_ev_builds_the_carrier_from_ev_and_destination(
        nic_factory, plane, spine, entropy, dst_leaf, dst_port):
    sw, cfg = nic_factory(generated_evs=True)
    ev = generated_ev(plane, spine, entropy)
    frame = mrc_frame(cfg, dst_leaf, dst_port, ev, tc=0x20)
    out = sw.inject(0, bytes(frame))
    carrier = carrier_ip(plane, cfg.leaf, spine, dst_leaf, dst_port)
    assert out == [(nic_plane_port(plane),
                    expected_fabric_frame(cfg, plane, carrier, inner_of(frame), flow_label=ev,
                                          traffic_class=0x20))]
    assert sw.counter_read("NicIngress.ev_tx", ev)[0] == 1


@pytest.mark.parametrize("ev,dst,port,carrier", [
    # Written out by hand from docs/addressing.md: a GENERATED EV is plane (bits 15..13),
    # spine (12..5), entropy (4..0); from leaf 0 of plane p via spine s to leaf l port n the
    # carrier is 0x100 + 0x300 p | 0x300 + 0x300 p + s | 0x100 + 0x300 p + l | 0xE000 + n.
    (0x0021, (1, 1), 1, "fcbb:bb00:100:301:101:e001::"),  # plane 0, spine 1, entropy 1
    (0x2044, (1, 2), 2, "fcbb:bb00:400:602:401:e002::"),  # plane 1, spine 2, entropy 4
    (0x4069, (2, 7), 3, "fcbb:bb00:700:903:702:e007::"),  # plane 2, spine 3, entropy 9
    (0x601F, (2, 2), 4, "fcbb:bb00:a00:c00:a02:e002::"),  # plane 3, spine 0, entropy 31
])
def test_generated_evs_carry_the_carriers_written_by_hand(nic_factory, ev, dst, port, carrier):
    sw, cfg = nic_factory(generated_evs=True)
    frame = mrc_frame(cfg, *dst, ev, tc=0x20)
    out = sw.inject(0, bytes(frame))
    assert out == [(port, expected_fabric_frame(cfg, port - 1, carrier, inner_of(frame), flow_label=ev,
                                                traffic_class=0x20))]


def test_generated_mode_tables_do_not_grow_with_hosts(nic_factory):
    """GENERATED mode reaches a host the NIC has no entry for (leaf 2 port 7)."""
    sw, cfg = nic_factory(generated_evs=True)
    assert all(len(sw.table_entries(t)) <= cfg.planes + 1 for t in
               ("NicIngress.gen_plane", "NicIngress.ev_mode", "NicIngress.ev_table", "NicIngress.spray"))
    ev = generated_ev(2, 3, 9)
    frame = mrc_frame(cfg, 2, 7, ev)
    out = sw.inject(0, bytes(frame))
    assert out == [(nic_plane_port(2),
                    expected_fabric_frame(cfg, 2, carrier_ip(2, 0, 3, 2, 7), inner_of(frame),
                                          flow_label=ev, traffic_class=0x68))]


@pytest.mark.parametrize("ev,dst,reason", [
    (generated_ev(5, 0), host_ip(1, 1), DROP_GEN_BAD_EV),      # plane 5 of 4
    (generated_ev(1, 4), host_ip(1, 1), DROP_GEN_BAD_EV),      # spine 4 of 4
    (generated_ev(1, 1), host_ip(3, 1), DROP_GEN_BAD_DST),     # leaf 3 of 3
    (generated_ev(1, 1), "fd00:0:1:0::1", DROP_GEN_BAD_DST),     # leaf port 0
    (generated_ev(1, 1), "fd00:0:1:1000::1", DROP_GEN_BAD_DST),  # leaf port 4096
    (generated_ev(1, 1), "fd00:7:1:1::1", DROP_GEN_BAD_DST),     # outside the host block
])
def test_generated_ev_outside_the_fabric_is_dropped_and_counted(nic_factory, ev, dst, reason):
    sw, cfg = nic_factory(generated_evs=True)
    # GENERATED mode for a wider prefix than the host block, so the NIC must check.
    sw.table_add("NicIngress.ev_mode", {"hdr.ipv6.dst_addr": Lpm(addr_int("fd00::"), 16)},
                 "NicIngress.mode_generated", {})
    frame = mrc_frame(cfg, 1, 1, ev, dst=dst)
    assert sw.inject(0, bytes(frame)) == []
    assert sw.counter_read("NicIngress.drops", reason)[0] == 1


def test_non_mrc_traffic_flow_label_is_stable_per_flow_and_differs_between_flows(nic):
    sw, cfg = nic
    labels = {}
    for sport in (1000, 1001, 1002, 1003):
        outs = [sw.inject(0, bytes(udp_frame(cfg, 1, 1, sport))) for _ in range(3)]
        got = set()
        for [(port, data)] in outs:
            pkt = Ether(data)
            got.add((port, pkt[IPv6].fl, pkt[IPv6].dst))
            assert bytes(pkt[IPv6].payload) == inner_of(udp_frame(cfg, 1, 1, sport))
        assert len(got) == 1
        labels[sport] = got.pop()[1]
    assert len(set(labels.values())) == 4


def test_explicit_ev_naming_plane_and_spine_serves_every_destination(nic):
    """An EV list of (EV -> plane, spine) entries: O(EVs), whatever the host count."""
    sw, cfg = nic
    ev = 0x4444
    sw.table_add("NicIngress.ev_table",
                 {"hdr.ipv6.dst_addr": Lpm(addr_int("fd00::"), 32), "meta.ev": ev},
                 "NicIngress.set_generated", {"plane": 2, "spine": 3})
    for dst_leaf, dst_port in [(1, 1), (2, 2), (0, 2), (2, 9)]:
        frame = mrc_frame(cfg, dst_leaf, dst_port, ev)
        out = sw.inject(0, bytes(frame))
        carrier = carrier_ip(2, cfg.leaf, 3, dst_leaf, dst_port)
        assert out == [(nic_plane_port(2),
                        expected_fabric_frame(cfg, 2, carrier, inner_of(frame), flow_label=ev,
                                              traffic_class=0x68))]


@pytest.mark.parametrize("tc", [
    0x02,  # MRC-lite data: DSCP 0, ECT(0)
    0x6A,  # RoCEv2 data: DSCP 26, ECT(0)
    0xC0,  # RoCEv2 CNP: DSCP 48, not ECN-capable
])
def test_the_hosts_traffic_class_is_the_outer_headers(nic, tc):
    """The fabric trims by the outer DSCP (docs/fabric.md): the NIC copies the host's
    whole traffic class, DSCP and ECN, into the outer header."""
    sw, cfg = nic
    ev, plane, carrier = 0x1000, 0, "fcbb:bb00:100:300:101:e001::"  # as written out above
    frame = mrc_frame(cfg, 1, 1, ev, tc=tc)
    [(port, data)] = sw.inject(0, bytes(frame))
    assert (port, Ether(data)[IPv6].tc) == (1 + plane, tc)
    assert data == expected_fabric_frame(cfg, plane, carrier, inner_of(frame), flow_label=ev, traffic_class=tc)
