"""What the MRC-lite sender and receiver share: the packet to send and the EV states.

The two state machines are ``endpoints/sender.py`` and ``endpoints/receiver.py``;
``endpoints/transport.py`` gathers their public names.
"""

from __future__ import annotations

from typing import Any, NamedTuple

GOOD = "good"
ASSUMED_BAD = "assumed_bad"
MAX_EVS = 256
CE = 0b11  # ECN field "congestion experienced" (RFC 3168)
HALF_PSN = 1 << 23  # half the PSN space: what lies within it ahead is "later"


class Tx(NamedTuple):
    """A packet to send on EV ``ev`` (written into its BTH pkey as it leaves), UDP
    payload ``payload``, to ``peer`` (the receiver's answers: the peer it was handed
    with the transfer's packets; the sender's packets all go to its one receiver:
    None), with traffic class ``tclass`` (DSCP and ECN; None: the socket's own, the
    endpoint's default class)."""

    ev: int
    payload: bytes
    peer: Any = None
    tclass: int | None = None
