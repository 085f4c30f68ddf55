"""The RoCE baseline's path: one EV per queue pair, chosen as an ECMP switch hashes.

An RC queue pair of RoCEv2 is one UDP flow: its packets all carry the same addresses
and ports, and every switch on the way hashes them onto one of its equal-cost next
hops, so the QP keeps one path for its whole life and several QPs land on the same
path whenever their hashes agree. In this fabric the sending NIC picks the path from
the EV in the BTH ``pkey`` (docs/packet-formats.md), so the baseline makes that
choice itself, once per QP, the way a switch would: CRC-32 (the IEEE 802.3
polynomial, ``zlib.crc32``) over the flow's 4-tuple, modulo the number of EVs.

The hashed bytes, in this order: the source address and the destination address
(4 bytes each for IPv4, 16 for IPv6, network order), the UDP source port and the
UDP destination port (2 bytes each, big-endian). The EV is ``evs[crc % len(evs)]``
over the sender's EV list in its given order (the plan's order, the same list
MRC-lite sprays over).
"""

from __future__ import annotations

import ipaddress
import zlib
from collections.abc import Sequence

EPHEMERAL_FIRST = 49152  # the IANA dynamic port range, where a NIC draws a QP's source port
PORT_LAST = 0xFFFF


def flow_key(src: str, dst: str, sport: int, dport: int) -> bytes:
    """The bytes an ECMP hash reads: source and destination address, UDP ports."""
    a, b = ipaddress.ip_address(src), ipaddress.ip_address(dst)
    if a.version != b.version:
        raise ValueError(f"ECMP hash: {src} and {dst} are not of the same address family")
    if not (0 <= sport <= PORT_LAST and 0 <= dport <= PORT_LAST):
        raise ValueError(f"ECMP hash: UDP ports {sport}, {dport} outside 0..65535")
    return a.packed + b.packed + sport.to_bytes(2, "big") + dport.to_bytes(2, "big")


def flow_hash(src: str, dst: str, sport: int, dport: int) -> int:
    """CRC-32 of the flow's 4-tuple (:func:`flow_key`)."""
    return zlib.crc32(flow_key(src, dst, sport, dport))


def qp_ev(src: str, dst: str, sport: int, dport: int, evs: Sequence[int]) -> int:
    """The EV a QP with this 4-tuple takes from ``evs`` for its whole life."""
    if not evs:
        raise ValueError("ECMP hash: the EV list is empty")
    return evs[flow_hash(src, dst, sport, dport) % len(evs)]


def source_port_for_ev(src: str, dst: str, dport: int, evs: Sequence[int], ev: int,
                       first: int = EPHEMERAL_FIRST, last: int = PORT_LAST) -> int | None:
    """The lowest UDP source port in ``first..last`` whose QP hashes onto ``ev``
    (None if none does): how to put a QP on a chosen path, as an experimenter on a
    real fabric would by trying source ports."""
    if ev not in evs:
        raise ValueError(f"ECMP hash: EV {ev} is not in the EV list")
    for sport in range(first, last + 1):
        if qp_ev(src, dst, sport, dport, evs) == ev:
            return sport
    return None
