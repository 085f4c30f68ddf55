"""fabric.p4 against 10,000 random, truncated and mutated frames (seeded).

Nothing may raise; every frame either leaves as a valid IPv6 frame or is dropped and
counted, and the counters add up exactly: packets in = packets out + drops.

"Valid" is judged from the outside, never by re-running fabric.p4's logic: the frame
leaves on a port the controller configured, with that port's MAC as source and the
configured neighbour as destination, as IPv6 with a hop limit one lower, its length
unchanged (no PSP or trimming is configured here), a destination that is the old one,
the old one shifted by one or two uSIDs, or a SID from its own segment list, and every
byte after the destination address unchanged except Segments Left.
"""

from __future__ import annotations

import ipaddress
import random

from scapy.layers.inet import UDP

from tests.dataplane.fabric.fabric_checks import (
    DROP_REASONS,
    EGRESS_DROPS,
    INGRESS_DROPS,
    PORTS,
    RX_PORT,
    TX_PORT,
    total,
)
from tests.dataplane.packets import L2, addr_int, encapsulated, frame, ipv6, mrc_ack, mrc_probe, mrc_write, srh, usid_carrier
from fabric.entries import TableEntry
from fabric.plan import LEAF, NIC
from fabric.topology import Topology
from fabric.match import Lpm
from tests.dataplane.fabric_net import entry, mac, switch_entries

SEED = 20261130
FRAMES = 10_000
PLANE = 0
L0, L1, S0, S1 = 0x0100, 0x0101, 0x0300, 0x0301
END_SID = "fc00:0:1::1"
ROUTE_PORT, ROUTE_MAC = 3, 0x020000000303
BLOCK = 0xFCBB_BB00


def leaf0_entries(topo: Topology) -> list[TableEntry]:
    return switch_entries(topo, "p0-leaf0") + [
        entry("FabricIngress.my_sid", {"hdr.ipv6.dst_addr": Lpm(addr_int(END_SID), 128)}, "FabricIngress.srv6_end"),
        entry("FabricIngress.ipv6_route", {"hdr.ipv6.dst_addr": Lpm(addr_int("fc00::"), 16)},
              "FabricIngress.fwd", {"port": ROUTE_PORT, "dmac": ROUTE_MAC}),
        entry("FabricIngress.ipv6_route", {"hdr.ipv6.dst_addr": Lpm(addr_int("fd00::"), 16)},
              "FabricIngress.fwd", {"port": ROUTE_PORT, "dmac": ROUTE_MAC}),
    ]


def templates() -> list[bytes]:
    """Valid frames of every kind the fabric handles."""
    l2 = L2(mac(PLANE, NIC, 0, 1), mac(PLANE, LEAF, 0, 1))
    inner_data = ipv6("fd00:0:0:1::1", "fd00:0:1:1::1") / mrc_write(ev=5, psn=1, payload=b"\x5a" * 48)
    inner_imm = ipv6("fd00:0:0:1::1", "fd00:0:1:1::1") / mrc_write(ev=5, psn=2, payload=b"\x11" * 8, imm=3)
    inner_ack = ipv6("fd00:0:1:1::1", "fd00:0:0:1::1") / mrc_ack(ev=5, psn=1, bitmap=0xFF)
    inner_probe = ipv6("fd00:0:1:1::1", "fd00:0:0:1::1") / mrc_probe(ev=5, seq=4)
    src = "fd00:1:0:1::1"
    out = []
    for inner in (inner_data, inner_imm, inner_ack, inner_probe):
        out.append(bytes(encapsulated(l2, src, usid_carrier([L0, S0, L1, 0xE001]), inner)))
        out.append(bytes(encapsulated(l2, src, usid_carrier([L0, 0xF004, L1, 0xE002]), inner)))
        out.append(bytes(encapsulated(l2, src, usid_carrier([S1, L1, 0xE001]), inner)))
        out.append(bytes(encapsulated(l2, src, usid_carrier([L0, 0xE001]), inner)))
        out.append(bytes(encapsulated(l2, src, usid_carrier([0xE002]), inner)))
        out.append(bytes(encapsulated(l2, src, usid_carrier([L0]), inner,
                                      segments=[usid_carrier([S0, L1, 0xE001]), usid_carrier([L0])])))
        out.append(bytes(encapsulated(l2, src, END_SID, inner,
                                      segments=["fc00:0:9::1", "fc00:0:8::1", END_SID], segments_left=2)))
    out.append(bytes(frame(l2, ipv6(src, END_SID), srh(["fc00:0:9::1", END_SID], 1, nh=17,
                                                        tlv_bytes=bytes([4, 6]) + bytes(6)),
                           UDP(sport=1, dport=4791) / (b"\x0a" + bytes(40)))))
    out.append(bytes(frame(l2, ipv6(src, "fd00:0:1:1::1"), UDP(sport=1, dport=9) / b"plain")))
    return out


def shifted(da: int) -> int:
    return (da & (0xFFFFFFFF << 96)) | ((da << 16) & ((1 << 96) - 1))


def srh_segments(data: bytes) -> tuple[set[int], int | None]:
    """SIDs of the SRH right after the IPv6 header (if any) and the offset of its SL byte."""
    if len(data) < 62 or data[20] != 43 or data[56] != 4:
        return set(), None
    n = data[58] + 1  # Last Entry + 1
    sids = set()
    for i in range(n):
        off = 62 + 16 * i
        if off + 16 <= len(data):
            sids.add(int.from_bytes(data[off:off + 16], "big"))
    return sids, 54 + 3


def check_forwarded(sent: bytes, port: int, out: bytes, port_macs: dict[int, bytes],
                    neighbours: dict[int, set[bytes]]) -> None:
    assert port in port_macs, f"left on unconfigured port {port}"
    assert len(out) == len(sent)
    assert out[6:12] == port_macs[port]
    assert out[0:6] in neighbours[port]
    assert out[12:14] == b"\x86\xdd" and out[14] >> 4 == 6
    assert out[14:21] == sent[14:21], "version/class/flow/length/next header changed"
    assert sent[21] >= 2 and out[21] == sent[21] - 1, "hop limit"
    assert 54 + int.from_bytes(out[18:20], "big") <= len(out)
    assert out[22:38] == sent[22:38], "source changed"
    old, new = int.from_bytes(sent[38:54], "big"), int.from_bytes(out[38:54], "big")
    sids, sl_off = srh_segments(sent)
    allowed = {old, shifted(old), shifted(shifted(old))} | sids
    assert new in allowed, f"DA {ipaddress.IPv6Address(new)} from {ipaddress.IPv6Address(old)}"
    if sl_off is not None and out[sl_off] != sent[sl_off]:
        # SRH End: Segments Left down by one, the DA one of the listed SIDs.
        assert out[sl_off] == sent[sl_off] - 1, "Segments Left"
        assert new in sids
        assert out[54:sl_off] == sent[54:sl_off] and out[sl_off + 1:] == sent[sl_off + 1:]
    else:
        assert out[54:] == sent[54:], "bytes after the IPv6 header changed"


def make_frames(rng: random.Random, base: list[bytes]) -> list[bytes]:
    frames = []
    for _ in range(FRAMES):
        kind = rng.random()
        if kind < 0.15:
            n = rng.randrange(0, 160)
            data = bytes(rng.getrandbits(8) for _ in range(n))
            if n >= 15 and rng.random() < 0.7:
                data = data[:12] + b"\x86\xdd" + bytes([0x60 | (data[14] & 0x0F)]) + data[15:]
        elif kind < 0.45:
            t = rng.choice(base)
            data = t[:rng.randrange(0, len(t) + 1)]
        else:
            t = bytearray(rng.choice(base))
            for _ in range(rng.randrange(1, 5)):
                pos = rng.randrange(0, min(len(t), 140)) if rng.random() < 0.85 else rng.randrange(0, len(t))
                t[pos] = rng.getrandbits(8) if rng.random() < 0.7 else t[pos] ^ (1 << rng.randrange(8))
            if rng.random() < 0.1:
                t = t[:rng.randrange(14, len(t) + 1)]
            data = bytes(t)
        frames.append(data)
    return frames


def test_ten_thousand_random_truncated_and_mutated_frames(fabric_switch_factory, tiny_fabric) -> None:
    entries = leaf0_entries(tiny_fabric)
    sw = fabric_switch_factory(entries)
    port_macs = {dict(e.match)["standard_metadata.egress_port"].value: bytes.fromhex("%012x" % dict(e.params)["mac"])
                 for e in entries if e.table == "FabricEgress.port_mac"}
    neighbours: dict[int, set[bytes]] = {}
    for e in entries:
        params = dict(e.params)
        if "dmac" in params:
            neighbours.setdefault(params["port"], set()).add(bytes.fromhex("%012x" % params["dmac"]))

    rng = random.Random(SEED)
    base = templates()
    frames = make_frames(rng, base)
    forwarded = 0
    sent_bytes = 0
    kinds_forwarded = set()
    for data in frames + base:
        sent_bytes += len(data)
        out = sw.inject(1, data)
        assert len(out) <= 1
        for port, got in out:
            check_forwarded(data, port, got, port_macs, neighbours)
            forwarded += 1
            kinds_forwarded.add(port)

    n = len(frames) + len(base)
    ingress_drops = total(sw, INGRESS_DROPS, DROP_REASONS)
    egress_drops = total(sw, EGRESS_DROPS, DROP_REASONS)
    rx = total(sw, RX_PORT, PORTS)
    tx = total(sw, TX_PORT, PORTS)
    assert rx.packets == n
    assert rx.bytes == sent_bytes
    assert tx.packets == forwarded
    assert ingress_drops.packets + egress_drops.packets + forwarded == n
    assert egress_drops.packets == 0
    # The run exercised both outcomes and several ports, and every valid template passed.
    assert forwarded > 1000 and ingress_drops.packets > 1000
    assert kinds_forwarded >= {3, 4, 1, 2}
