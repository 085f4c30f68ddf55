"""fabric.p4 classic SRv6 (RFC 8986 4.1): End, End.X, PSP, uN at end of carrier, SRH checks.

Leaf 0 of the tiny fabric (the controller's entries) gets extra classic SIDs and a route for their
prefix. Each test builds the SRH frame with scapy, sends it, and compares the exact
bytes with the frame the RFC says must leave, built independently.
"""

from __future__ import annotations

import pytest
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether

from tests.dataplane.fabric.fabric_checks import (
    DROP_BAD_SRH,
    DROP_HOP_LIMIT,
    DROP_NOT_FOR_ME,
    RX_PORT,
    TX_PORT,
    Count,
    counter,
    drops,
)
from tests.dataplane.packets import L2, addr_int, frame, ipv6, mrc_write, srh, usid_carrier
from fabric.entries import TableEntry
from fabric.plan import LEAF, NIC, SPINE
from fabric.match import Lpm
from tests.dataplane.fabric_net import entry, mac, switch_entries

PLANE = 0
L0, L1, S0 = 0x0100, 0x0101, 0x0300
END, END_PSP, END_X, END_X_PSP = "fc00:0:1::1", "fc00:0:1::2", "fc00:0:1::3", "fc00:0:1::4"
FAR = ["fc00:0:9::1", "fc00:0:8::1", "fc00:0:7::1", "fc00:0:6::1", "fc00:0:5::1", "fc00:0:4::1",
       "fc00:0:3::1", "fc00:0:2::9"]
ROUTE_PORT, ROUTE_MAC, ROUTE_MAC_INT = 3, "02:00:00:00:03:03", 0x020000000303
X_PORT, X_MAC, X_MAC_INT = 4, "02:00:00:00:04:04", 0x020000000404
IN_L2 = L2(mac(PLANE, NIC, 0, 1), mac(PLANE, LEAF, 0, 1))
ROUTE_L2 = L2(mac(PLANE, LEAF, 0, ROUTE_PORT), ROUTE_MAC)
X_L2 = L2(mac(PLANE, LEAF, 0, X_PORT), X_MAC)
SRC = "fd00:1:0:1::1"


def sid_entry(sid: str, action: str, **params: int) -> TableEntry:
    return entry("FabricIngress.my_sid", {"hdr.ipv6.dst_addr": Lpm(addr_int(sid), 128)}, action, params)


@pytest.fixture
def sw(fabric_switch_factory, tiny_fabric):
    extra = [
        sid_entry(END, "FabricIngress.srv6_end"),
        sid_entry(END_PSP, "FabricIngress.srv6_end_psp"),
        sid_entry(END_X, "FabricIngress.srv6_end_x", port=X_PORT, dmac=X_MAC_INT),
        sid_entry(END_X_PSP, "FabricIngress.srv6_end_x_psp", port=X_PORT, dmac=X_MAC_INT),
        entry("FabricIngress.ipv6_route", {"hdr.ipv6.dst_addr": Lpm(addr_int("fc00::"), 16)},
              "FabricIngress.fwd", {"port": ROUTE_PORT, "dmac": ROUTE_MAC_INT}),
    ]
    return fabric_switch_factory(switch_entries(tiny_fabric, "p0-leaf0") + extra)


def inner():
    return ipv6("fd00:0:0:1::1", "fd00:0:1:1::1") / mrc_write(ev=9, psn=3, payload=b"\xaa" * 40)


def srv6(l2: L2, da: str, segments: list[str], sl: int, *, hlim: int = 64, **srh_kw) -> bytes:
    return bytes(frame(l2, ipv6(SRC, da, hlim=hlim), srh(segments, sl, nh=41, **srh_kw), inner()))


def segment_list(active: str, sl: int, length: int) -> list[str]:
    """Segment List[0..length-1] with ``active`` at index ``sl`` and far SIDs elsewhere."""
    segs = FAR[:length]
    segs[sl] = active
    return segs


@pytest.mark.parametrize("sl", [1, 2, 3, 4, 5, 6, 7])
def test_end_for_several_segments_left(sw, sl: int) -> None:
    segs = segment_list(END, sl, 8 if sl == 7 else sl + 1)
    sent = srv6(IN_L2, END, segs, sl)
    out = sw.inject(1, sent)
    assert out == [(ROUTE_PORT, srv6(ROUTE_L2, segs[sl - 1], segs, sl - 1, hlim=63))]
    assert drops(sw) == {}
    assert counter(sw, RX_PORT, 1) == Count(1, len(sent))
    assert counter(sw, TX_PORT, ROUTE_PORT) == Count(1, len(sent))


def test_end_with_segments_left_below_last_entry(sw) -> None:
    """SL 2 of a 5-entry list: only the DA and SL change."""
    segs = segment_list(END, 2, 5)
    out = sw.inject(1, srv6(IN_L2, END, segs, 2))
    assert out == [(ROUTE_PORT, srv6(ROUTE_L2, segs[1], segs, 1, hlim=63))]


def test_end_psp_pops_the_srh_at_the_penultimate_segment(sw) -> None:
    segs = segment_list(END_PSP, 1, 3)
    out = sw.inject(1, srv6(IN_L2, END_PSP, segs, 1))
    want = bytes(frame(ROUTE_L2, ipv6(SRC, segs[0], hlim=63), inner()))
    assert out == [(ROUTE_PORT, want)]
    assert Ether(out[0][1])[IPv6].nh == 41


def test_end_psp_keeps_the_srh_before_the_penultimate_segment(sw) -> None:
    segs = segment_list(END_PSP, 2, 3)
    out = sw.inject(1, srv6(IN_L2, END_PSP, segs, 2))
    assert out == [(ROUTE_PORT, srv6(ROUTE_L2, segs[1], segs, 1, hlim=63))]


def test_end_x_sends_on_its_adjacency(sw) -> None:
    segs = segment_list(END_X, 2, 3)
    out = sw.inject(1, srv6(IN_L2, END_X, segs, 2))
    assert out == [(X_PORT, srv6(X_L2, segs[1], segs, 1, hlim=63))]


def test_end_x_psp(sw) -> None:
    segs = segment_list(END_X_PSP, 1, 2)
    out = sw.inject(1, srv6(IN_L2, END_X_PSP, segs, 1))
    assert out == [(X_PORT, bytes(frame(X_L2, ipv6(SRC, segs[0], hlim=63), inner())))]


def test_un_at_end_of_carrier_continues_with_the_next_carrier_in_the_srh(sw) -> None:
    """DA fcbb:bb00:100:: (mine, argument empty), SRH SL 1: the next carrier goes to spine 0."""
    nxt = usid_carrier([S0, L1, 0xE001])
    segs = [nxt, usid_carrier([L0])]
    out = sw.inject(1, srv6(IN_L2, usid_carrier([L0]), segs, 1))
    up = L2(mac(PLANE, LEAF, 0, 3), mac(PLANE, SPINE, 0, 1))
    assert out == [(3, srv6(up, nxt, segs, 0, hlim=63))]


def test_un_psp_pops_the_srh_when_it_empties(fabric_switch_factory, tiny_fabric) -> None:
    """uN with PSP at the end of its carrier: SRH End to the last segment, SRH removed."""
    entries = [e for e in switch_entries(tiny_fabric, "p0-leaf0") if e.table != "FabricIngress.my_sid"]
    entries.append(entry("FabricIngress.my_sid", {"hdr.ipv6.dst_addr": Lpm(addr_int(usid_carrier([L0])), 48)},
                         "FabricIngress.usid_un_psp"))
    psw = fabric_switch_factory(entries)
    nxt = usid_carrier([S0, L1, 0xE001])
    out = psw.inject(1, srv6(IN_L2, usid_carrier([L0]), [nxt, usid_carrier([L0])], 1))
    up = L2(mac(PLANE, LEAF, 0, 3), mac(PLANE, SPINE, 0, 1))
    assert out == [(3, bytes(frame(up, ipv6(SRC, nxt, hlim=63), inner())))]


def test_end_keeps_srh_tlvs(sw) -> None:
    tlvs = bytes([4, 6]) + b"\0" * 6 + bytes([0x80, 6]) + b"\x11" * 6  # PadN + an opaque TLV
    segs = segment_list(END, 1, 2)
    out = sw.inject(1, srv6(IN_L2, END, segs, 1, tlv_bytes=tlvs))
    assert out == [(ROUTE_PORT, srv6(ROUTE_L2, segs[0], segs, 0, hlim=63, tlv_bytes=tlvs))]


def test_transit_leaves_the_srh_alone(sw) -> None:
    segs = FAR[:3]
    out = sw.inject(1, srv6(IN_L2, FAR[2], segs, 2))
    assert out == [(ROUTE_PORT, srv6(ROUTE_L2, FAR[2], segs, 2, hlim=63))]


# ---- malformed or not for transit -----------------------------------------------


def assert_dropped(sw, sent: bytes, reason: int) -> None:
    assert sw.inject(1, sent) == []
    assert drops(sw) == {reason: 1}
    assert counter(sw, "FabricIngress.drops", reason) == Count(1, len(sent))
    assert counter(sw, RX_PORT, 1) == Count(1, len(sent))


@pytest.mark.parametrize("sl,last_entry", [(3, 1), (4, 2), (9, 7), (255, 0)])
def test_segments_left_beyond_last_entry_plus_one(sw, sl: int, last_entry: int) -> None:
    segs = [END] * (last_entry + 1)
    assert_dropped(sw, srv6(IN_L2, END, segs, sl), DROP_BAD_SRH)


@pytest.mark.parametrize("last_entry,hdr_ext_len", [(2, 4), (1, 0), (3, 2), (7, 14)])
def test_last_entry_beyond_hdr_ext_len(sw, last_entry: int, hdr_ext_len: int) -> None:
    """Hdr Ext Len too short for Last Entry + 1 segments: the SRH cannot be read."""
    segs = [END] * (hdr_ext_len // 2)
    sent = bytes(frame(IN_L2, ipv6(SRC, END),
                       srh(segs, 1, nh=59, last_entry=last_entry, hdr_ext_len=hdr_ext_len)))
    assert_dropped(sw, sent, DROP_BAD_SRH)


def test_segments_left_zero_is_not_for_transit(sw) -> None:
    assert_dropped(sw, srv6(IN_L2, END, [END, FAR[0]], 0), DROP_NOT_FOR_ME)


def test_end_sid_without_srh_is_not_for_transit(sw) -> None:
    assert_dropped(sw, bytes(frame(IN_L2, ipv6(SRC, END), inner())), DROP_NOT_FOR_ME)


@pytest.mark.parametrize("hlim", [0, 1])
def test_hop_limit_expired_at_end(sw, hlim: int) -> None:
    segs = segment_list(END, 1, 2)
    assert_dropped(sw, srv6(IN_L2, END, segs, 1, hlim=hlim), DROP_HOP_LIMIT)


def too_long_srh_frame(da: str) -> bytes:
    return srv6(IN_L2, da, [END] + FAR + ["fc00:0:2::1", "fc00:0:2::2"], 9)


def test_srh_over_the_parser_limit_is_bad_at_an_end_sid(sw) -> None:
    assert_dropped(sw, too_long_srh_frame(END), DROP_BAD_SRH)


def test_srh_over_the_parser_limit_still_transits(sw) -> None:
    sent = too_long_srh_frame(FAR[0])
    out = sw.inject(1, sent)
    want = bytearray(sent)
    want[0:12] = bytes.fromhex(ROUTE_MAC.replace(":", "") + mac(PLANE, LEAF, 0, ROUTE_PORT).replace(":", ""))
    want[14 + 7] = 63  # hop limit
    assert out == [(ROUTE_PORT, bytes(want))]


def test_other_routing_types_are_bad_at_an_end_sid(sw) -> None:
    assert_dropped(sw, srv6(IN_L2, END, [FAR[0], END], 1, routing_type=0), DROP_BAD_SRH)


def test_other_routing_types_transit(sw) -> None:
    out = sw.inject(1, srv6(IN_L2, FAR[1], [FAR[0], FAR[1]], 1, routing_type=0))
    assert out == [(ROUTE_PORT, srv6(ROUTE_L2, FAR[1], [FAR[0], FAR[1]], 1, hlim=63, routing_type=0))]
