"""Scapy builders for the project's SRv6 / MRC-lite frames, shared by dataplane tests.

Why here: the fabric and NIC tests build the same frames (uSID carriers, SRH
encapsulations, MRC-lite data and control packets). The builders know only the wire
format of docs/packet-formats.md and docs/addressing.md; they never encode what a P4
program does to a packet, so tests build their expected outputs with them from their
own knowledge of the path.

Importing this module binds the MRC-lite layers to UDP port 4791 in scapy, so
``Ether(frame)`` dissects them.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass

from scapy.layers.inet import UDP
from scapy.layers.inet6 import IPv6, IPv6ExtHdrSegmentRouting
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw, bind_layers
from scapy.fields import (
    BitField,
    ByteField,
    IntField,
    LongField,
    ShortField,
    StrFixedLenField,
    XByteField,
    XIntField,
    XLongField,
)

USID_BLOCK = 0xFCBB_BB00
UDP_PORT_MRC = 4791

# MRC-lite BTH opcodes (docs/packet-formats.md).
OP_WRITE = 0x0A
OP_WRITE_IMM = 0x0B
OP_ACK = 0x11
OP_PROBE = 0xC0
OP_PROBE_REPLY = 0xC1
OP_OPEN = 0xC2
OP_STATUS = 0xC3
DATA_OPCODES = frozenset({OP_WRITE, OP_WRITE_IMM})

SYNDROME_ACK = 0x00
SYNDROME_NACK_LOSS = 0x60
SYNDROME_NACK_TRIMMED = 0x61

ETH_LEN = 14
IPV6_LEN = 40
UDP_LEN = 8
BTH_LEN = 12
RETH_LEN = 16
IMMDT_LEN = 4
AETH_LEN = 4
SACK_LEN = 16
PROBE_LEN = 16


class BTH(Packet):
    """InfiniBand Base Transport Header as MRC-lite uses it (12 bytes)."""

    name = "MRC BTH"
    fields_desc = [
        XByteField("opcode", OP_WRITE),
        BitField("solicited", 0, 1),
        BitField("mig_req", 0, 1),
        BitField("pad_count", 0, 2),
        BitField("tver", 0, 4),
        ShortField("pkey", 0xFFFF),
        BitField("fecn", 0, 1),
        BitField("becn", 0, 1),
        BitField("resv6", 0, 6),
        BitField("dest_qp", 0, 24),
        BitField("ack_req", 0, 1),
        BitField("resv7", 0, 7),
        BitField("psn", 0, 24),
    ]

    def guess_payload_class(self, payload: bytes) -> type[Packet]:
        if self.opcode in DATA_OPCODES:
            return RETH
        if self.opcode == OP_ACK:
            return AETH
        if self.opcode in (OP_PROBE, OP_PROBE_REPLY):
            return Probe
        if self.opcode == OP_OPEN:
            return Open
        if self.opcode == OP_STATUS:
            return Status
        return Raw


class RETH(Packet):
    """RDMA Extended Transport Header: the payload's final address (16 bytes)."""

    name = "MRC RETH"
    fields_desc = [XLongField("vaddr", 0), XIntField("rkey", 0), IntField("dma_len", 0)]

    def guess_payload_class(self, payload: bytes) -> type[Packet]:
        under = self.underlayer
        if isinstance(under, BTH) and under.opcode == OP_WRITE_IMM:
            return ImmDt
        return Raw


class ImmDt(Packet):
    """Immediate data of WRITE with immediate (4 bytes)."""

    name = "MRC ImmDt"
    fields_desc = [XIntField("imm", 0)]


class AETH(Packet):
    """ACK extended transport header: ACK or NACK by syndrome (4 bytes)."""

    name = "MRC AETH"
    fields_desc = [XByteField("syndrome", SYNDROME_ACK), BitField("msn", 0, 24)]

    def guess_payload_class(self, payload: bytes) -> type[Packet]:
        return SACK


class SACK(Packet):
    """MRC-lite selective acknowledgement block (16 bytes)."""

    name = "MRC SACK"
    fields_desc = [
        ShortField("ev", 0),
        ByteField("flags", 0),
        ByteField("reserved", 0),
        XIntField("base_psn", 0),
        XLongField("bitmap", 0),
    ]


class Probe(Packet):
    """MRC-lite path probe body (16 bytes)."""

    name = "MRC Probe"
    fields_desc = [
        ShortField("ev", 0),
        ShortField("flags", 0),
        IntField("seq", 0),
        LongField("timestamp", 0),
    ]


class Open(Packet):
    """MRC-lite transfer request, sender to receiver (40 bytes; BTH psn = first PSN)."""

    name = "MRC Open"
    fields_desc = [
        ShortField("ev", 0),
        ByteField("version", 1),
        ByteField("reserved", 0),
        XIntField("sender_qp", 0),
        LongField("length", 0),
        ShortField("mtu", 1000),
        ShortField("window", 256),
        IntField("reserved2", 0),
        StrFixedLenField("digest", b"\0" * 32, 32),
    ]


class Status(Packet):
    """MRC-lite transfer state, receiver to sender (24 bytes; BTH psn = cumulative PSN)."""

    name = "MRC Status"
    fields_desc = [
        ShortField("ev", 0),
        ByteField("state", 1),
        ByteField("reason", 0),
        XIntField("receiver_qp", 0),
        XIntField("rkey", 0),
        IntField("reserved", 0),
        XLongField("vaddr", 0),
    ]


bind_layers(UDP, BTH, dport=UDP_PORT_MRC)


# ---- addresses ------------------------------------------------------------


def usid_carrier(usids: Sequence[int], block: int = USID_BLOCK) -> str:
    """The IPv6 address ``block:u1:u2:...::`` (32-bit block, 16-bit uSIDs, zero-filled)."""
    if len(usids) > 6:
        raise ValueError("a F3216 carrier holds at most 6 uSIDs")
    value = block << 96
    for i, usid in enumerate(usids):
        if not 0 < usid <= 0xFFFF:
            raise ValueError(f"bad uSID {usid:#x}")
        value |= usid << (80 - 16 * i)
    return str(ipaddress.IPv6Address(value))


def addr(value: int | str) -> str:
    """Normalise an IPv6 address given as int or text to scapy's text form."""
    return str(ipaddress.IPv6Address(value))


def addr_int(value: str) -> int:
    return int(ipaddress.IPv6Address(value))


# ---- MRC-lite transport -----------------------------------------------------


def with_ev(payload: bytes, ev: int) -> bytes:
    """An MRC-lite UDP payload with its EV where it travels: BTH pkey, bytes 2-3
    (docs/packet-formats.md). The endpoints' codecs leave the EV to their I/O layer."""
    return payload[:2] + ev.to_bytes(2, "big") + payload[4:]


def mrc_write(
    ev: int,
    psn: int,
    payload: bytes = b"",
    *,
    dest_qp: int = 0x12,
    vaddr: int = 0x1000,
    rkey: int = 0x55,
    imm: int | None = None,
    sport: int = UDP_PORT_MRC,
) -> Packet:
    """UDP/BTH/RETH[/ImmDt]/payload of an MRC-lite data packet (EV in BTH pkey; the
    UDP source port is the sending socket's, ``sport``)."""
    opcode = OP_WRITE if imm is None else OP_WRITE_IMM
    pkt = UDP(sport=sport, dport=UDP_PORT_MRC) / BTH(
        opcode=opcode, pkey=ev, dest_qp=dest_qp, psn=psn, ack_req=1
    ) / RETH(vaddr=vaddr, rkey=rkey, dma_len=len(payload))
    if imm is not None:
        pkt = pkt / ImmDt(imm=imm)
    return pkt / Raw(payload) if payload else pkt


def mrc_ack(
    ev: int,
    psn: int,
    *,
    syndrome: int = SYNDROME_ACK,
    dest_qp: int = 0x12,
    base_psn: int = 0,
    bitmap: int = 0,
) -> Packet:
    """UDP/BTH/AETH/SACK of an MRC-lite ACK or NACK (``syndrome``)."""
    return (
        UDP(sport=UDP_PORT_MRC, dport=UDP_PORT_MRC)
        / BTH(opcode=OP_ACK, pkey=ev, dest_qp=dest_qp, psn=psn)
        / AETH(syndrome=syndrome)
        / SACK(ev=ev, base_psn=base_psn, bitmap=bitmap)
    )


def mrc_probe(ev: int, seq: int, *, reply: bool = False, timestamp: int = 0) -> Packet:
    """UDP/BTH/Probe of an MRC-lite probe or probe reply."""
    return (
        UDP(sport=UDP_PORT_MRC, dport=UDP_PORT_MRC)
        / BTH(opcode=OP_PROBE_REPLY if reply else OP_PROBE, pkey=ev)
        / Probe(ev=ev, seq=seq, timestamp=timestamp)
    )


# ---- frames ----------------------------------------------------------------


@dataclass(frozen=True)
class L2:
    """Ethernet addresses of one hop."""

    src: str
    dst: str


def ipv6(src: str, dst: str, *, hlim: int = 64, tc: int = 0, fl: int = 0) -> IPv6:
    return IPv6(src=addr(src), dst=addr(dst), hlim=hlim, tc=tc, fl=fl)


def srh(
    segments: Sequence[str],
    segments_left: int,
    *,
    last_entry: int | None = None,
    hdr_ext_len: int | None = None,
    routing_type: int = 4,
    tag: int = 0,
    nh: int | None = None,
    tlv_bytes: bytes = b"",
) -> Packet:
    """An SRH whose ``segments`` are Segment List[0], [1], ... (wire order).

    ``last_entry`` and ``hdr_ext_len`` default to the consistent values; tests pass
    others to build malformed headers. ``tlv_bytes`` (a multiple of 8) follow the list.
    """
    if len(tlv_bytes) % 8:
        raise ValueError("SRH TLV area must be a multiple of 8 bytes")
    fields: dict[str, object] = dict(
        type=routing_type,
        segleft=segments_left,
        addresses=[addr(s) for s in segments],
        tag=tag,
    )
    if last_entry is not None:
        fields["lastentry"] = last_entry
    else:
        fields["lastentry"] = max(len(segments) - 1, 0)
    if hdr_ext_len is not None:
        fields["len"] = hdr_ext_len
    else:
        fields["len"] = 2 * len(segments) + len(tlv_bytes) // 8
    if nh is not None:
        fields["nh"] = nh
    hdr = IPv6ExtHdrSegmentRouting(**fields)
    if tlv_bytes:
        # scapy's TLV objects would re-pad; carry the TLV area verbatim instead.
        raw = bytes(hdr) + tlv_bytes
        return IPv6ExtHdrSegmentRouting(raw)
    return hdr


def frame(l2: L2, *layers: Packet) -> Ether:
    """Ether(l2)/layers[0]/layers[1]/..., with the Ethernet type left to scapy."""
    pkt: Packet = Ether(src=l2.src, dst=l2.dst)
    for layer in layers:
        pkt = pkt / layer
    return pkt


def encapsulated(
    l2: L2,
    outer_src: str,
    outer_dst: str,
    inner: Packet,
    *,
    segments: Sequence[str] | None = None,
    segments_left: int | None = None,
    hlim: int = 64,
    tc: int = 0,
    fl: int = 0,
) -> Ether:
    """An SRv6 encapsulation: Ether/IPv6(outer)[/SRH]/inner (inner is an IPv6 packet)."""
    outer = ipv6(outer_src, outer_dst, hlim=hlim, tc=tc, fl=fl)
    if segments is None:
        return frame(l2, outer, inner)
    sl = len(segments) - 1 if segments_left is None else segments_left
    return frame(l2, outer, srh(segments, sl, nh=41), inner)


def as_bytes(pkt: Packet) -> bytes:
    """Build a scapy packet (lengths, checksums) into wire bytes."""
    return bytes(pkt)


def pad60(data: bytes) -> bytes:
    """Pad a frame to Ethernet's 60-byte minimum, as a NIC would on the wire."""
    return data + b"\x00" * max(0, 60 - len(data))
