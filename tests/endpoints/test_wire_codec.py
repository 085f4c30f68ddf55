"""endpoints/wire.py against the independent scapy layers of tests/dataplane/packets.py:
what one builds the other reads, field by field (docs/packet-formats.md)."""

from __future__ import annotations

from endpoints import wire
from tests.dataplane.packets import AETH, BTH, RETH, SACK, Open, Probe, Status


def test_data_header() -> None:
    raw = wire.data_header(0xABCDEF, 0x123456, 0x1122334455667788, 0xDEADBEEF, 1000, True)
    p = BTH(raw + b"x" * 1000)
    assert (p.opcode, p.pkey, p.dest_qp, p.psn, p.ack_req) == (0x0A, 0xFFFF, 0xABCDEF, 0x123456, 1)
    assert (p[RETH].vaddr, p[RETH].rkey, p[RETH].dma_len) == (0x1122334455667788, 0xDEADBEEF, 1000)
    assert len(raw) == 28
    assert wire.data_header(1, 2, 3, 4, 5, False)[8] & 0x80 == 0


def test_ack_bitmap_bit63_is_base_psn() -> None:
    # Transport order: bit i = base + i. Base and base + 2 received, base + 63 too.
    raw = wire.ack(0x42, 0x000FFF, wire.SYNDROME_NACK_LOSS, 0x1005, 0x001000, 0b101 | 1 << 63)
    p = BTH(raw)
    assert p.opcode == 0x11 and p.dest_qp == 0x42 and p.psn == 0x000FFF
    assert p[AETH].syndrome == 0x60
    assert (p[SACK].ev, p[SACK].base_psn) == (0x1005, 0x1000)
    assert p[SACK].bitmap == (1 << 63) | (1 << 61) | 1
    assert len(raw) == 32


def test_reverse64() -> None:
    assert wire.reverse64(1) == 1 << 63
    assert wire.reverse64(0x8000_0000_0000_0001) == 0x8000_0000_0000_0001
    assert wire.reverse64(0x0F) == 0xF0 << 56
    for v in (0, 0x1234_5678_9ABC_DEF0, (1 << 64) - 1):
        assert wire.reverse64(wire.reverse64(v)) == v


def test_probe_open_status() -> None:
    p = BTH(wire.probe(wire.OP_PROBE, 7, 0x2001, 99, 123456789))
    assert p.opcode == 0xC0 and p.dest_qp == 7
    assert (p[Probe].ev, p[Probe].seq, p[Probe].timestamp) == (0x2001, 99, 123456789)
    o = wire.Open(ev=0x1001, version=1, sender_qp=0x777, first_psn=0xFFFFF0, length=10**9, mtu=1000, window=256,
                  digest=bytes(range(32)))
    p = BTH(o.pack())
    assert p.opcode == 0xC2 and p.psn == 0xFFFFF0
    assert (p[Open].ev, p[Open].sender_qp, p[Open].length, p[Open].mtu, p[Open].window, p[Open].digest) == (
        0x1001, 0x777, 10**9, 1000, 256, bytes(range(32)))
    # scapy-built, read by the codec
    built = bytes(BTH(opcode=0xC2, psn=5) / Open(ev=3, sender_qp=9, length=77, mtu=500, window=16, digest=b"d" * 32))
    assert wire.Open.unpack(built) == wire.Open(3, 1, 9, 5, 77, 500, 16, b"d" * 32)
    built = bytes(BTH(opcode=0xC3, dest_qp=9, psn=0x10) / Status(ev=3, state=3, receiver_qp=0x55, rkey=0xAA,
                                                                   vaddr=0x1000))
    assert wire.Status.unpack(built) == wire.Status(3, 9, 0x10, 3, 0, 0x55, 0xAA, 0x1000)
    assert len(built) == wire.STATUS_LEN


def test_psn_arithmetic() -> None:
    assert wire.psn_diff(0, 0xFFFFFF) == 1
    assert wire.psn_diff(0xFFFFFF, 0) == -1
    assert wire.psn_diff(100, 50) == 50
    assert wire.psn_add(0xFFFFFF, 2) == 1
