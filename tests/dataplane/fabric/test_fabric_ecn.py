"""fabric.p4 ECN CE marking under a congested egress queue (RFC 3168).

The queue is made as in test_fabric_trim.py: the uplink is rate limited on the
traffic manager's virtual clock and a burst is sent at once, so packet k of the
burst finds k packets (at most) ahead of it. The port's ``ecn_config`` entry sets
the depth above which an ECN-capable packet (ECT(0) or ECT(1) in the outer traffic
class) leaves with CE (11); a trimmed packet is left as trimming makes it.
"""

from __future__ import annotations

from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether

from fabric.entries import TableEntry

from tests.dataplane.fabric.fabric_checks import TRIMMED, TX_PORT, Count, counter, drops
from tests.dataplane.fabric.test_fabric_trim import UPLINK, data, forwarded, tiny, trimmed
from tests.dataplane.fabric_net import entry, switch_entries
from tests.dataplane.packets import BTH

ECN_MARKED = "FabricEgress.ecn_marked"
ECT0, ECT1, CE = 0b10, 0b01, 0b11


def ecn_entry(threshold: int) -> TableEntry:
    return entry("FabricEgress.ecn_config", {"standard_metadata.egress_port": UPLINK}, "FabricEgress.set_ecn",
                 {"threshold": threshold})


def leaf0(fabric_switch_factory, *, ecn: int | None | str, trim: int | None = None):
    """Leaf 0 of the tiny fabric, its uplink limited; ``ecn``: the uplink's marking
    threshold in place of the controller's ("controller": the controller's own entries
    unchanged, None: no ecn_config entry at all)."""
    entries = switch_entries(tiny(trim), "p0-leaf0")
    if ecn != "controller":
        entries = [e for e in entries if getattr(e, "table", None) != "FabricEgress.ecn_config"]
        entries += [] if ecn is None else [ecn_entry(ecn)]
    sw = fabric_switch_factory(entries)
    sw.set_queue_rate(UPLINK, 1000.0)
    return sw


def test_the_controller_marks_fabric_ports_above_8_packets(fabric_switch_factory) -> None:
    """The controller's own entries mark (the documented default: 8 packets on a fabric
    port, below the default trim threshold of 32), with no entry written by the test."""
    assert ecn_entry(8) in switch_entries(tiny(32), "p0-leaf0")
    n = 20
    sw = leaf0(fabric_switch_factory, ecn="controller", trim=32)
    by_psn = burst(sw, [data(psn, tc=ECT0) for psn in range(n)])
    marked = {psn for psn, d in by_psn.items() if Ether(d)[IPv6].tc & 3 == CE}
    assert marked.isdisjoint(range(9)) and set(range(10, n)) <= marked
    assert counter(sw, ECN_MARKED, UPLINK).packets == len(marked)
    assert counter(sw, TRIMMED, UPLINK).packets == 0


def burst(sw, frames: list[bytes]) -> dict[int, bytes]:
    for f in frames:
        sw.send(1, f)
    out = sw.run_until_idle() + sw.advance(1.0)
    assert [p for p, _ in out] == [UPLINK] * len(frames)
    return {Ether(d)[BTH].psn: d for _, d in out}


def with_ecn(frame: bytes, ecn: int) -> bytes:
    """``forwarded(frame)`` with the outer traffic class's ECN bits set to ``ecn``."""
    pkt = Ether(forwarded(frame))
    pkt[IPv6].tc = (pkt[IPv6].tc & 0xFC) | ecn
    return bytes(pkt)


def test_ect_packets_above_the_threshold_leave_with_ce(fabric_switch_factory) -> None:
    threshold, n = 4, 20
    sw = leaf0(fabric_switch_factory, ecn=threshold)
    frames = [data(psn, tc=(10 << 2) | (ECT0 if psn % 2 else ECT1)) for psn in range(n)]
    by_psn = burst(sw, frames)
    assert sorted(by_psn) == list(range(n))
    marked = {psn for psn, d in by_psn.items() if Ether(d)[IPv6].tc & 3 == CE}
    # Packet k finds at most k packets ahead: the first threshold + 1 are never marked;
    # only one can leave before the burst is queued: from threshold + 2 on, all are.
    assert marked.isdisjoint(range(threshold + 1))
    assert set(range(threshold + 2, n)) <= marked
    for psn, d in by_psn.items():
        want = with_ecn(frames[psn], CE) if psn in marked else forwarded(frames[psn])
        assert d == want, f"psn {psn}"
        assert Ether(d)[IPv6].tc >> 2 == 10  # the DSCP is kept
    assert counter(sw, ECN_MARKED, UPLINK).packets == len(marked)
    assert counter(sw, TX_PORT, UPLINK).packets == n
    assert drops(sw) == {}


def test_packets_that_are_not_ecn_capable_are_never_marked(fabric_switch_factory) -> None:
    sw = leaf0(fabric_switch_factory, ecn=2)
    frames = [data(psn, tc=0x28 << 2) for psn in range(15)]  # DSCP 40, ECN 00: not ECT
    by_psn = burst(sw, frames)
    assert [by_psn[psn] for psn in range(15)] == [forwarded(f) for f in frames]
    assert counter(sw, ECN_MARKED, UPLINK) == Count(0, 0)


def test_no_ecn_config_no_marking(fabric_switch_factory) -> None:
    sw = leaf0(fabric_switch_factory, ecn=None)
    frames = [data(psn, tc=ECT0) for psn in range(15)]
    by_psn = burst(sw, frames)
    assert [by_psn[psn] for psn in range(15)] == [forwarded(f) for f in frames]
    assert counter(sw, ECN_MARKED, UPLINK) == Count(0, 0)


def test_marking_below_the_trim_threshold_and_trimming_above_it(fabric_switch_factory) -> None:
    """ECN threshold 2, trim threshold 8: packets that find 3..8 ahead leave whole with
    CE, deeper ones are trimmed (trim DSCP, their ECT kept, no CE)."""
    n = 20
    sw = leaf0(fabric_switch_factory, ecn=2, trim=8)
    frames = [data(psn, tc=ECT0) for psn in range(n)]
    by_psn = burst(sw, frames)
    cut = {psn for psn, d in by_psn.items() if len(d) < len(frames[psn])}
    marked = {psn for psn, d in by_psn.items() if Ether(d)[IPv6].tc & 3 == CE}
    assert cut.isdisjoint(range(9)) and set(range(10, n)) <= cut
    assert marked.isdisjoint(range(3)) and set(range(4, 9)) <= marked
    assert marked.isdisjoint(cut) and marked | cut >= set(range(4, n))
    for psn in cut:
        assert by_psn[psn] == trimmed(psn, ecn=ECT0)
    for psn in marked:
        assert by_psn[psn] == with_ecn(frames[psn], CE)
    assert counter(sw, ECN_MARKED, UPLINK).packets == len(marked)
    assert counter(sw, TRIMMED, UPLINK).packets == len(cut)
