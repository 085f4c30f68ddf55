"""MRC-lite packet formats as struct codecs (docs/packet-formats.md).

Why struct and not scapy: the endpoints parse and build every packet of a transfer
(50,000+ per second); scapy needs tens of microseconds per packet, ``struct`` a
fraction of one. The scapy layers in ``tests/dataplane/packets.py`` describe the same
wire format independently; the tests build hostile packets with them and check that
these codecs agree.

Everything here is the UDP payload (BTH onwards); the UDP header belongs to the I/O
layer (``endpoints/io.py``). The EV is BTH ``pkey`` (at ``EV_OFFSET``): the codecs
leave it ``PKEY`` and the I/O layer writes each packet's EV there as it sends it and
reads it from there on arrival. All fields big-endian.

Bitmaps: on the wire bit 63 of a SACK bitmap is ``base_psn`` (docs/packet-formats.md);
the transport works with "bit i = base + i", so :func:`reverse64` converts between
the two at this boundary.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

UDP_PORT_MRC = 4791
PSN_BITS = 24
PSN_MOD = 1 << PSN_BITS
PSN_MASK = PSN_MOD - 1
QP_MASK = 0xFFFFFF

# BTH opcodes (RC: the top three bits 000). MRC-lite sends every data packet as
# WRITE Only (each carries its RETH); the RoCE baseline cuts a message into WRITE
# First / Middle / Last (or Only), as an RC QP does (endpoints/roce_sender.py ``write_opcode``).
OP_WRITE_FIRST = 0x06
OP_WRITE_MIDDLE = 0x07
OP_WRITE_LAST = 0x08
OP_WRITE = 0x0A  # RDMA WRITE Only
OP_WRITE_IMM = 0x0B
OP_ACK = 0x11  # Acknowledge (ACK or NAK, by AETH syndrome)
OP_CNP = 0x81  # RoCEv2 Congestion Notification Packet (the annex's CNP opcode)
OP_PROBE = 0xC0
OP_PROBE_REPLY = 0xC1
OP_OPEN = 0xC2
OP_STATUS = 0xC3

# AETH syndromes. IBTA: bits 6..5 are the kind (00 ACK, 01 RNR NAK, 11 NAK), bits
# 4..0 the NAK code (0: PSN sequence error). MRC-lite's loss NACK is the PSN
# sequence error's value; its trim NACK reuses code 1. The RoCE baseline sends ACK
# and NAK PSN sequence error only.
SYNDROME_ACK = 0x00
SYNDROME_NACK_LOSS = 0x60
SYNDROME_NAK_PSN_SEQUENCE = 0x60  # the RoCE baseline's NAK: "expected PSN", go back to it
SYNDROME_NACK_TRIMMED = 0x61

# STATUS states (the receiver's view of one transfer) and refusal reasons.
STATE_ACCEPTED = 1
STATE_REFUSED = 2
STATE_VERIFIED = 3
STATE_CORRUPT = 4
REFUSE_LENGTH = 1  # longer than the receiver's buffer limit, or not the length it expects
REFUSE_MTU = 2  # payload size 0 or above MAX_MTU
REFUSE_WINDOW = 3  # window 0 or above the receiver's limit
REFUSE_BUSY = 4  # the receiver holds as many transfers as it accepts
REFUSE_VERSION = 5
REFUSE_MEMORY = 6  # the receiver could not allocate a buffer of that length
REFUSE_REASONS = {
    REFUSE_LENGTH: "transfer length not accepted by the receiver (--bytes / --max-bytes)",
    REFUSE_MTU: "payload size not accepted by the receiver",
    REFUSE_WINDOW: "window larger than the receiver accepts",
    REFUSE_BUSY: "the receiver accepts no more transfers",
    REFUSE_VERSION: "unknown protocol version, or the other transport (give mrc-send and mrc-recv the same "
                    "--transport)",
    REFUSE_MEMORY: "the receiver has not enough memory for a buffer of that length",
}

VERSION = 1  # OPEN version of an MRC-lite transfer ...
VERSION_ROCE = 2  # ... and of a RoCE baseline transfer (a receiver of the other transport refuses it)
MAX_MTU = 9000
PKEY = 0xFFFF  # what the codecs write where the I/O layer puts the EV
EV_OFFSET = 2  # the EV's two bytes in every MRC-lite packet: BTH pkey

# BTH: opcode, se/m/pad/tver, pkey, fecn/becn/resv6 | dest_qp, ack_req | resv7 | psn.
BTH = struct.Struct("!BBHII")
# BTH + 16 reserved bytes: a CNP (RoCEv2 annex: BECN set, PSN 0, no payload).
CNP = struct.Struct("!BBHII16x")
# BTH + RETH (vaddr, rkey, dma_len).
DATA = struct.Struct("!BBHIIQII")
# BTH + AETH (syndrome | msn) + SACK (ev, flags, reserved, base_psn, bitmap).
ACK = struct.Struct("!BBHIIIHBBIQ")
# BTH + PROBE (ev, flags, seq, timestamp).
PROBE = struct.Struct("!BBHIIHHIQ")
# BTH + OPEN (ev, version, reserved, sender_qp, length, mtu, window, reserved, digest).
OPEN = struct.Struct("!BBHIIHBBIQHHI32s")
# BTH + STATUS (ev, state, reason, receiver_qp, rkey, reserved, vaddr).
STATUS = struct.Struct("!BBHIIHBBIIIQ")

BTH_LEN = BTH.size  # 12
DATA_HDR_LEN = DATA.size  # 28
IMMDT_LEN = 4
ACK_LEN = ACK.size  # 32
PROBE_LEN = PROBE.size  # 28
OPEN_LEN = OPEN.size  # 68
STATUS_LEN = STATUS.size  # 36
ACK_REQ = 1 << 31
BECN = 1 << 30  # BTH word 1 (fecn, becn, resv6 | dest_qp): set on a CNP
CNP_LEN = CNP.size  # 28
RESENT = 1 << 30  # BTH resv7's first bit: this data packet is a retransmission (receiver's reordering window)
FLAG_CE = 0x01  # SACK flags: the data packet answered arrived with ECN CE
# SACK flags: the data packet answered (its EV echoed in ``ev``) is a first
# transmission the receiver NACKed as lost before it arrived: that NACK was spurious
FLAG_LATE = 0x02

_REVERSE_BYTE = bytes(int(f"{b:08b}"[::-1], 2) for b in range(256))


def reverse64(value: int) -> int:
    """Reverse the bit order of a 64-bit value (wire bitmap <-> "bit i = base + i")."""
    return int.from_bytes(value.to_bytes(8, "little").translate(_REVERSE_BYTE), "big")


def psn_add(psn: int, n: int) -> int:
    return (psn + n) & PSN_MASK


def psn_diff(a: int, b: int) -> int:
    """Signed distance a - b between two PSNs, in [-2**23, 2**23)."""
    return ((a - b + (PSN_MOD >> 1)) & PSN_MASK) - (PSN_MOD >> 1)


def data_header(qp: int, psn: int, vaddr: int, rkey: int, length: int, ack_req: bool) -> bytes:
    return DATA.pack(OP_WRITE, 0, PKEY, qp, (ACK_REQ if ack_req else 0) | psn, vaddr, rkey, length)


def ack(qp: int, cum_psn: int, syndrome: int, ev: int, base_psn: int, bits: int, flags: int = 0,
        msn: int = 0) -> bytes:
    """An ACK or NACK; ``bits`` has bit i = PSN base_psn + i (64 bits); ``msn`` the
    AETH's message sequence number (the RoCE baseline's completed messages)."""
    return ACK.pack(OP_ACK, 0, PKEY, qp, cum_psn, syndrome << 24 | (msn & QP_MASK), ev, flags, 0, base_psn,
                    reverse64(bits))


def cnp(qp: int) -> bytes:
    """A Congestion Notification Packet to the sender's QP ``qp``."""
    return CNP.pack(OP_CNP, 0, PKEY, BECN | (qp & QP_MASK), 0)


def probe(opcode: int, qp: int, ev: int, seq: int, timestamp: int) -> bytes:
    return PROBE.pack(opcode, 0, PKEY, qp, 0, ev, 0, seq, timestamp)


@dataclass(frozen=True, slots=True)
class Open:
    """A sender's request to start a transfer (opcode OPEN)."""

    ev: int
    version: int
    sender_qp: int
    first_psn: int
    length: int
    mtu: int
    window: int
    digest: bytes

    def pack(self) -> bytes:
        return OPEN.pack(OP_OPEN, 0, PKEY, 0, self.first_psn, self.ev, self.version, 0,
                         self.sender_qp, self.length, self.mtu, self.window, 0, self.digest)

    @classmethod
    def unpack(cls, data: bytes | memoryview) -> Open:
        (_op, _f, _pk, _qp, w2, ev, version, _r, sqp, length, mtu, window, _r2,
         digest) = OPEN.unpack_from(data)
        return cls(ev, version, sqp & QP_MASK, w2 & PSN_MASK, length, mtu, window, digest)


@dataclass(frozen=True, slots=True)
class Status:
    """The receiver's state of one transfer (opcode STATUS); ``cum_psn`` in the BTH."""

    ev: int
    sender_qp: int
    cum_psn: int
    state: int
    reason: int
    receiver_qp: int
    rkey: int
    vaddr: int

    def pack(self) -> bytes:
        return STATUS.pack(OP_STATUS, 0, PKEY, self.sender_qp, self.cum_psn, self.ev, self.state,
                           self.reason, self.receiver_qp, self.rkey, 0, self.vaddr)

    @classmethod
    def unpack(cls, data: bytes | memoryview) -> Status:
        (_op, _f, _pk, qp, w2, ev, state, reason, rqp, rkey, _r, vaddr) = STATUS.unpack_from(data)
        return cls(ev, qp & QP_MASK, w2 & PSN_MASK, state, reason, rqp & QP_MASK, rkey, vaddr)
