"""fabric.p4 packet trimming under a congested egress queue.

The queue is made real with the traffic manager's virtual clock: the uplink is rate
limited, a burst is sent at once (so later packets find a deep queue), then the clock
advances until the queue drains. v1model knows the depth only in egress
(``enq_qdepth``), which is where fabric.p4 trims; the trim DSCP maps to a high
priority at the next switch's ingress (docs/fabric.md).
"""

from __future__ import annotations

from scapy.layers.inet import UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether

from tests.dataplane.fabric.fabric_checks import TRIMMED, TX_PORT, Count, counter, drops
from tests.dataplane.packets import (
    BTH,
    L2,
    RETH,
    SYNDROME_NACK_LOSS,
    ImmDt,
    encapsulated,
    frame,
    ipv6,
    mrc_ack,
    mrc_probe,
    mrc_write,
    usid_carrier,
)
from fabric.plan import LEAF, NIC, SPINE
from fabric.topology import from_parameters
from fabric.match import Lpm
from tests.dataplane.fabric_net import entry, mac, switch_entries

PLANE = 0
L0, L1, S0 = 0x0100, 0x0101, 0x0300
HOST_A, HOST_B, NIC_A = "fd00:0:0:1::1", "fd00:0:1:1::1", "fd00:1:0:1::1"
THRESHOLD = 4
TRIM_DSCP = 62  # the project's default trim mark (docs/packet-formats.md)
UPLINK = 3  # leaf 0 -> spine 0
IN_L2 = L2(mac(PLANE, NIC, 0, 1), mac(PLANE, LEAF, 0, 1))
OUT_L2 = L2(mac(PLANE, LEAF, 0, UPLINK), mac(PLANE, SPINE, 0, 1))
DA_IN = usid_carrier([L0, S0, L1, 0xE001])
DA_OUT = usid_carrier([S0, L1, 0xE001])
PAYLOAD = bytes(range(256)) * 4  # 1024 bytes


def tiny(threshold: int | None):
    """The tiny fabric with the controller's trim settings (``threshold`` None: no trimming)."""
    return from_parameters(name="tiny", planes=1, spines=2, leaves=2, hosts_per_leaf=2,
                           trim_threshold=threshold, no_trim=threshold is None)


def leaf0(fabric_switch_factory, threshold: int | None = THRESHOLD):
    sw = fabric_switch_factory(switch_entries(tiny(threshold), "p0-leaf0"))
    sw.set_queue_rate(UPLINK, 1000.0)
    return sw


def data(psn: int, *, imm: int | None = None, tc: int = 0, hlim: int = 64) -> bytes:
    inner = ipv6(HOST_A, HOST_B) / mrc_write(ev=0x2001, psn=psn, payload=PAYLOAD, vaddr=0x10000 + psn * 1024,
                                             imm=imm)
    return bytes(encapsulated(IN_L2, NIC_A, DA_IN, inner, hlim=hlim, tc=tc, fl=0x2001))


def forwarded(sent: bytes) -> bytes:
    """What a non-trimmed frame looks like after leaf 0: new MACs, DA shifted, hop limit - 1."""
    pkt = Ether(sent)
    inner = pkt[IPv6].payload.copy()
    return bytes(encapsulated(OUT_L2, NIC_A, DA_OUT, inner, hlim=pkt[IPv6].hlim - 1,
                              tc=pkt[IPv6].tc, fl=pkt[IPv6].fl))


def trimmed(psn: int, *, imm: int | None = None, ecn: int = 0, hlim: int = 63) -> bytes:
    """The trimmed data packet, built from scratch: headers up to RETH/IMMDT, lengths by scapy."""
    l4 = (UDP(sport=4791, dport=4791)
          / BTH(opcode=0x0A if imm is None else 0x0B, pkey=0x2001, dest_qp=0x12, psn=psn, ack_req=1)
          / RETH(vaddr=0x10000 + psn * 1024, rkey=0x55, dma_len=len(PAYLOAD)))
    if imm is not None:
        l4 = l4 / ImmDt(imm=imm)
    inner = ipv6(HOST_A, HOST_B) / l4
    return bytes(encapsulated(OUT_L2, NIC_A, DA_OUT, inner, hlim=hlim, tc=(TRIM_DSCP << 2) | ecn, fl=0x2001))


def burst(sw, frames: list[bytes]) -> list[tuple[int, bytes]]:
    for f in frames:
        sw.send(1, f)
    out = sw.run_until_idle()
    out += sw.advance(1.0)
    return out


def test_burst_trims_data_that_finds_a_deep_queue(fabric_switch_factory) -> None:
    sw = leaf0(fabric_switch_factory)
    n = 20
    frames = [data(psn) for psn in range(n)]
    out = burst(sw, frames)
    assert [p for p, _ in out] == [UPLINK] * n
    by_psn = {Ether(d)[BTH].psn: d for _, d in out}
    assert sorted(by_psn) == list(range(n))
    trimmed_psns = {psn for psn, d in by_psn.items() if len(d) < len(frames[psn])}
    # Packet k finds at most k packets ahead of it: the first THRESHOLD + 1 can't be
    # trimmed. Only one packet can leave before the burst is queued: from k =
    # THRESHOLD + 2 on, all must be.
    assert set(range(THRESHOLD + 1)).isdisjoint(trimmed_psns)
    assert set(range(THRESHOLD + 2, n)) <= trimmed_psns
    for psn, d in by_psn.items():
        want = trimmed(psn) if psn in trimmed_psns else forwarded(frames[psn])
        assert d == want, f"psn {psn}:\n{Ether(d).show2(dump=True)}"
    for psn in trimmed_psns:
        pkt = Ether(by_psn[psn])
        assert pkt[IPv6].plen == 40 + 8 + 12 + 16
        assert pkt[IPv6].payload[IPv6].plen == pkt[UDP].len == 8 + 12 + 16
        assert pkt[IPv6].tc >> 2 == TRIM_DSCP
    assert counter(sw, TRIMMED, UPLINK).packets == len(trimmed_psns)
    assert counter(sw, TX_PORT, UPLINK).packets == n
    assert drops(sw) == {}


def test_write_with_immediate_keeps_its_immediate_and_ecn(fabric_switch_factory) -> None:
    sw = leaf0(fabric_switch_factory)
    frames = [data(psn, imm=0xABCD0000 + psn, tc=0x02) for psn in range(12)]
    out = burst(sw, frames)
    by_psn = {Ether(d)[BTH].psn: d for _, d in out}
    assert len(by_psn) == 12
    for psn in range(THRESHOLD + 2, 12):
        assert by_psn[psn] == trimmed(psn, imm=0xABCD0000 + psn, ecn=0x02)
        assert Ether(by_psn[psn])[ImmDt].imm == 0xABCD0000 + psn


def control_frames() -> list[bytes]:
    acks = [mrc_ack(ev=0x2001, psn=i, base_psn=i + 1, bitmap=0xF0F0) for i in range(3)]
    nack = mrc_ack(ev=0x2001, psn=9, syndrome=SYNDROME_NACK_LOSS, base_psn=10, bitmap=1)
    probes = [mrc_probe(ev=0x2001, seq=5), mrc_probe(ev=0x2001, seq=6, reply=True, timestamp=99)]
    return [bytes(encapsulated(IN_L2, NIC_A, DA_IN, ipv6(HOST_B, HOST_A) / c, fl=0x2001))
            for c in acks + [nack] + probes]


def test_control_packets_in_a_deep_queue_are_never_trimmed(fabric_switch_factory) -> None:
    sw = leaf0(fabric_switch_factory)
    fill = [data(psn) for psn in range(10)]
    controls = control_frames()
    out = burst(sw, fill + controls)
    assert len(out) == len(fill) + len(controls)
    # The control packets were queued behind 10 data packets (far over the threshold)
    # and still leave whole, in order, after the data.
    got_controls = [d for _, d in out if Ether(d)[BTH].opcode not in (0x0A, 0x0B)]
    assert got_controls == [forwarded(c) for c in controls]
    assert counter(sw, TRIMMED, UPLINK).packets == sum(
        1 for _, d in out if Ether(d)[BTH].opcode == 0x0A and len(d) < len(fill[0]))
    assert counter(sw, TRIMMED, UPLINK).packets >= 10 - THRESHOLD - 2


def test_no_trim_config_no_trimming(fabric_switch_factory) -> None:
    sw = leaf0(fabric_switch_factory, threshold=None)
    frames = [data(psn) for psn in range(15)]
    out = burst(sw, frames)
    assert sorted(d for _, d in out) == sorted(forwarded(f) for f in frames)
    assert counter(sw, TRIMMED, UPLINK) == Count(0, 0)


def test_trim_mark_gets_high_priority_at_the_next_switch(fabric_switch_factory) -> None:
    """A frame already carrying the trim DSCP jumps the queue of normal data."""
    sw = leaf0(fabric_switch_factory)
    frames = [data(psn) for psn in range(10)]
    marked = data(100, tc=TRIM_DSCP << 2)
    out = burst(sw, frames + [marked])
    order = [Ether(d)[BTH].psn for _, d in out]
    # At most one data packet left before the marked one was queued.
    assert order.index(100) <= 1, order
    # Re-trimming a packet that is already marked (and deep in no queue) changes nothing else.
    assert len(order) == 11


def test_non_mrc_udp_is_never_trimmed(fabric_switch_factory) -> None:
    sw = leaf0(fabric_switch_factory)
    frames = [bytes(encapsulated(IN_L2, NIC_A, DA_IN, ipv6(HOST_A, HOST_B) / UDP(sport=5, dport=9000) / PAYLOAD))
              for _ in range(12)]
    out = burst(sw, frames)
    assert [d for _, d in out] == [forwarded(f) for f in frames]
    assert counter(sw, TRIMMED, UPLINK) == Count(0, 0)


def test_plain_ipv6_mrc_without_encapsulation_is_trimmed(fabric_switch_factory) -> None:
    """MRC-lite straight over IPv6 (no SRv6): the outer header's lengths are fixed."""
    route = entry("FabricIngress.ipv6_route", {"hdr.ipv6.dst_addr": Lpm(0xFD00_0001 << 96, 32)},
                  "FabricIngress.fwd", {"port": UPLINK, "dmac": int(mac(PLANE, SPINE, 0, 1).replace(":", ""), 16)})
    sw = fabric_switch_factory(switch_entries(tiny(THRESHOLD), "p0-leaf0") + [route])
    sw.set_queue_rate(UPLINK, 1000.0)
    dst = "fd00:1:1:1::1"
    frames = [bytes(frame(IN_L2, ipv6(NIC_A, dst), mrc_write(ev=7, psn=psn, payload=PAYLOAD))) for psn in range(10)]
    out = burst(sw, frames)
    by_psn = {Ether(d)[BTH].psn: d for _, d in out}
    for psn in range(THRESHOLD + 2, 10):
        want = bytes(frame(OUT_L2, ipv6(NIC_A, dst, hlim=63, tc=TRIM_DSCP << 2),
                           UDP(sport=4791, dport=4791) / BTH(opcode=0x0A, pkey=7, dest_qp=0x12, psn=psn, ack_req=1)
                           / RETH(vaddr=0x1000, rkey=0x55, dma_len=len(PAYLOAD))))
        assert by_psn[psn] == want


def test_trimming_with_an_srh_fixes_the_outer_length_around_it(fabric_switch_factory) -> None:
    """Outer IPv6 + SRH (second carrier) + inner: outer payload = SRH + inner headers."""
    from tests.dataplane.packets import srh

    sw = leaf0(fabric_switch_factory)
    nxt = usid_carrier([L1, 0xE001])
    da_in, da_out = usid_carrier([L0, S0]), usid_carrier([S0])

    def with_srh(l2: L2, da: str, hlim: int, inner, tc: int = 0) -> bytes:
        return bytes(frame(l2, ipv6(NIC_A, da, hlim=hlim, tc=tc, fl=0x2001), srh([nxt], 1, nh=41), inner))

    def inner_data(psn: int, payload: bytes = PAYLOAD):
        return ipv6(HOST_A, HOST_B) / mrc_write(ev=0x2001, psn=psn, payload=payload, vaddr=0x10000 + psn * 1024)

    frames = [with_srh(IN_L2, da_in, 64, inner_data(psn)) for psn in range(10)]
    out = burst(sw, frames)
    by_psn = {Ether(d)[BTH].psn: d for _, d in out}
    for psn in range(THRESHOLD + 2, 10):
        cut = (ipv6(HOST_A, HOST_B) / UDP(sport=4791, dport=4791)
               / BTH(opcode=0x0A, pkey=0x2001, dest_qp=0x12, psn=psn, ack_req=1)
               / RETH(vaddr=0x10000 + psn * 1024, rkey=0x55, dma_len=len(PAYLOAD)))
        want = with_srh(OUT_L2, da_out, 63, cut, tc=TRIM_DSCP << 2)
        assert by_psn[psn] == want
        assert Ether(want)[IPv6].plen == 24 + 40 + 36
