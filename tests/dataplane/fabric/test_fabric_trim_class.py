"""fabric.p4 trims only the traffic classes the topology names (by DSCP).

MRC-lite data leaves its host with DSCP 0 and ECT(0); a RoCEv2 transport's data, with
the same UDP port, BTH and RETH, leaves with DSCP 26 and ECT(0) (its CNPs with DSCP
48). The NIC copies the host's traffic class into the outer header
(tests/dataplane/nic/test_nic_encap.py), so the outer DSCP is what a fabric switch
classifies on. With the controller's entries for the default fabric, a congested port
cuts DSCP-0 data and lets DSCP-26 data queue whole (CE-marked above the ECN
threshold, tail-dropped when the queue is full); a fabric configured to trim DSCP 26
does the opposite. The queue is made as in test_fabric_trim.py: the uplink is rate
limited on the traffic manager's virtual clock and a burst goes in at once, so
packet k of the burst finds k - 1 or k packets ahead of it.
"""

from __future__ import annotations

from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether

from fabric.topology import from_parameters
from tests.dataplane.fabric.fabric_checks import TRIMMED, TX_PORT, Count, counter, drops
from tests.dataplane.fabric.test_fabric_trim import DA_IN, DA_OUT, HOST_A, HOST_B, IN_L2, NIC_A, OUT_L2, UPLINK
from tests.dataplane.fabric_net import switch_entries
from tests.dataplane.packets import BTH, encapsulated, ipv6, mrc_write

ECN_MARKED = "FabricEgress.ecn_marked"
ECT0, CE = 0b10, 0b11
TRIM_DSCP = 62  # the default trim mark
MRC_TC = (0 << 2) | ECT0  # 0x02: MRC-lite data
ROCE_TC = (26 << 2) | ECT0  # 0x6a: the RoCEv2 baseline's data
THRESHOLD = 4  # trim above 4 packets queued
ECN_UPLINK = 8  # the controller's ECN threshold on a fabric port (leaf uplink)
PAYLOAD = bytes(range(256)) * 4
MRC_EV, ROCE_PKEY = 0x2001, 0xFFFF


def topo(classes: tuple[int, ...] | None = None):
    """The dataplane tests' tiny fabric, trimming above THRESHOLD, its trimmed classes
    ``classes`` (None: the default)."""
    return from_parameters(name="tiny", planes=1, spines=2, leaves=2, hosts_per_leaf=2,
                           trim_threshold=THRESHOLD, trim_classes=classes)


def sent(psn: int, tc: int) -> bytes:
    """A data packet (BTH WRITE + RETH + 1 KiB) as the NIC sends it: the host's traffic
    class ``tc`` in the inner header and copied into the outer one."""
    pkey = MRC_EV if tc >> 2 == 0 else ROCE_PKEY
    inner = ipv6(HOST_A, HOST_B, tc=tc) / mrc_write(pkey, psn, PAYLOAD, vaddr=0x10000 + psn * 1024)
    return bytes(encapsulated(IN_L2, NIC_A, DA_IN, inner, tc=tc, fl=0x2001))


def whole(psn: int, tc: int, *, outer_ecn: int | None = None) -> bytes:
    """The packet leaving leaf 0 whole: new MACs, DA shifted, hop limit 63, the outer
    ECN field ``outer_ecn`` when given (CE), the inner header untouched."""
    pkey = MRC_EV if tc >> 2 == 0 else ROCE_PKEY
    inner = ipv6(HOST_A, HOST_B, tc=tc) / mrc_write(pkey, psn, PAYLOAD, vaddr=0x10000 + psn * 1024)
    outer_tc = tc if outer_ecn is None else (tc & 0xFC) | outer_ecn
    return bytes(encapsulated(OUT_L2, NIC_A, DA_OUT, inner, hlim=63, tc=outer_tc, fl=0x2001))


def cut(psn: int, tc: int) -> bytes:
    """The packet leaving leaf 0 trimmed: headers up to RETH (its length still the
    payload's), lengths 36 / 76, outer DSCP the trim mark, ECN kept, the inner header's
    traffic class untouched; scapy computes the lengths and the UDP checksum."""
    pkey = MRC_EV if tc >> 2 == 0 else ROCE_PKEY
    l4 = mrc_write(pkey, psn, vaddr=0x10000 + psn * 1024)
    l4[BTH].payload.dma_len = len(PAYLOAD)
    pkt = encapsulated(OUT_L2, NIC_A, DA_OUT, ipv6(HOST_A, HOST_B, tc=tc) / l4, hlim=63,
                       tc=(TRIM_DSCP << 2) | (tc & 3), fl=0x2001)
    assert len(pkt[IPv6].payload) == 40 + 36
    return bytes(pkt)


def mixed(n: int) -> list[bytes]:
    """Even PSNs MRC-lite data (DSCP 0), odd PSNs RoCEv2 data (DSCP 26), both ECT(0)."""
    return [sent(psn, MRC_TC if psn % 2 == 0 else ROCE_TC) for psn in range(n)]


def leaf0(fabric_switch_factory, classes: tuple[int, ...] | None = None, depth: int | None = None):
    sw = fabric_switch_factory(switch_entries(topo(classes), "p0-leaf0"))
    sw.set_queue_rate(UPLINK, 1000.0)
    if depth is not None:
        sw.set_queue_depth(UPLINK, depth)
    return sw


def burst(sw, frames: list[bytes]) -> dict[int, bytes]:
    for f in frames:
        sw.send(1, f)
    out = sw.run_until_idle() + sw.advance(1.0)
    assert {p for p, _ in out} <= {UPLINK}
    return {Ether(d)[BTH].psn: d for _, d in out}


def ce(d: bytes) -> bool:
    return Ether(d)[IPv6].tc & 3 == CE


def test_the_default_fabric_trims_mrc_lite_data_and_not_roce_data(fabric_switch_factory) -> None:
    """Trim threshold 4, ECN threshold 8 on the uplink (the controller's), 24 packets:
    MRC-lite data that found more than 4 queued is cut (from PSN 6 on); RoCE data is
    never cut, and leaves with CE when it found more than 8 (from PSN 11 on; PSN 9
    found 8 or 9)."""
    n = 24
    sw = leaf0(fabric_switch_factory)
    by_psn = burst(sw, mixed(n))
    assert sorted(by_psn) == list(range(n))
    for psn in range(0, n, 2):  # MRC-lite
        assert by_psn[psn] == (whole(psn, MRC_TC) if psn <= 4 else cut(psn, MRC_TC)), f"psn {psn}"
    for psn in range(1, n, 2):  # RoCE: same port, BTH and RETH, another class
        if psn == 9:
            assert by_psn[psn] in (whole(psn, ROCE_TC), whole(psn, ROCE_TC, outer_ecn=CE))
            continue
        assert by_psn[psn] == (whole(psn, ROCE_TC) if psn < 9 else whole(psn, ROCE_TC, outer_ecn=CE)), f"psn {psn}"
    assert counter(sw, TRIMMED, UPLINK).packets == len(range(6, n, 2))  # 9
    assert counter(sw, ECN_MARKED, UPLINK).packets == sum(ce(d) for d in by_psn.values())
    assert counter(sw, TX_PORT, UPLINK).packets == n
    assert drops(sw) == {}


def test_roce_data_that_is_not_ecn_capable_leaves_as_it_came(fabric_switch_factory) -> None:
    sw = leaf0(fabric_switch_factory)
    tc = 26 << 2  # DSCP 26, ECN 00
    by_psn = burst(sw, [sent(psn, tc) for psn in range(16)])
    assert [by_psn[psn] for psn in range(16)] == [whole(psn, tc) for psn in range(16)]
    assert counter(sw, TRIMMED, UPLINK) == Count(0, 0)
    assert counter(sw, ECN_MARKED, UPLINK) == Count(0, 0)


def test_roce_data_over_the_queue_limit_is_dropped_whole_data_never_cut(fabric_switch_factory) -> None:
    """The uplink's queue holds 10 packets: RoCE data beyond it is tail-dropped (a lossy
    fabric without PFC); what leaves, leaves whole."""
    n = 20
    sw = leaf0(fabric_switch_factory, depth=10)
    by_psn = burst(sw, [sent(psn, ROCE_TC) for psn in range(n)])
    # 10 fit in the queue; at most one left before the burst was queued
    assert set(range(10)) <= set(by_psn) <= set(range(11))
    for psn, d in by_psn.items():
        assert d in (whole(psn, ROCE_TC), whole(psn, ROCE_TC, outer_ecn=CE)), f"psn {psn}"
    assert counter(sw, TRIMMED, UPLINK) == Count(0, 0)
    assert counter(sw, TX_PORT, UPLINK).packets == len(by_psn)


def test_a_fabric_configured_to_trim_dscp_26_trims_that_class_only(fabric_switch_factory) -> None:
    """``trim: {classes: [26]}``: now RoCE data is cut (from PSN 7 on; PSN 5 found 4 or
    5) and MRC-lite data is not, CE-marked when it found more than 8 (from PSN 10 on)."""
    n = 24
    sw = leaf0(fabric_switch_factory, classes=(26,))
    by_psn = burst(sw, mixed(n))
    assert sorted(by_psn) == list(range(n))
    for psn in range(0, n, 2):
        assert by_psn[psn] == (whole(psn, MRC_TC) if psn <= 8 else whole(psn, MRC_TC, outer_ecn=CE)), f"psn {psn}"
    for psn in range(1, n, 2):
        if psn == 5:
            assert by_psn[psn] in (whole(psn, ROCE_TC), cut(psn, ROCE_TC))
            continue
        assert by_psn[psn] == (whole(psn, ROCE_TC) if psn < 5 else cut(psn, ROCE_TC)), f"psn {psn}"
    assert counter(sw, TRIMMED, UPLINK).packets == sum(len(by_psn[p]) < len(whole(p, ROCE_TC)) for p in by_psn)
    assert counter(sw, TRIMMED, UPLINK).packets >= len(range(7, n, 2))
    assert counter(sw, ECN_MARKED, UPLINK).packets == len(range(10, n, 2))
