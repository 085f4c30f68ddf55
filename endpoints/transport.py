"""MRC-lite sender and receiver as pure state machines (no sockets, no clocks).

Why pure: the transport's behaviour (spraying, retiring and recovering EVs, trimming,
retransmission) must be tested deterministically against a simulated network, and
the same code must run against real sockets. So time is passed in (``now``, seconds,
any monotonic origin), packets come in through ``on_packet`` and go out as the
return value of ``poll`` / ``on_packet``; ``endpoints/io.py`` drives them with sockets
and a clock, ``tests/endpoints/simnet.py`` with a simulated network.

One transfer = one RDMA-WRITE-style message of ``length`` bytes cut into packets of
``mtu`` payload bytes; packet ``i`` has PSN ``first_psn + i`` (mod 2**24) and carries
its final address ``vaddr + i * mtu`` (RETH), so the receiver places it whatever the
order of arrival. A transfer starts with OPEN (length, payload size, window, SHA-256 of
the whole transfer) answered by STATUS (receiver QP, rkey, buffer address), and ends
with STATUS VERIFIED (the receiver's digest matched) or CORRUPT. Packet formats:
docs/packet-formats.md; the wire codecs: ``endpoints/wire.py``.

Packet indices (``idx``, 0-based, unbounded) are used inside; PSNs only on the wire.

The sender is ``endpoints/sender.py`` (its parts: ``sender_config.py``, ``ev_set.py``,
``spray.py``, ``retransmit.py``, ``congestion.py``, ``sender_report.py``), the receiver ``endpoints/receiver.py``, what
they share ``endpoints/common.py``; this module gathers their public names.
"""

from __future__ import annotations

from endpoints.common import ASSUMED_BAD, GOOD, MAX_EVS, Tx
from endpoints.receiver import Connection, Receiver, ReceiverConfig
from endpoints.ev_set import EvStats
from endpoints.sender import Sender
from endpoints.sender_config import SenderConfig

__all__ = ["ASSUMED_BAD", "GOOD", "MAX_EVS", "Connection", "EvStats", "Receiver", "ReceiverConfig", "Sender",
           "SenderConfig", "Tx"]
