"""The RoCE baseline's parameters and their checks (``endpoints/roce_sender.py`` and
``endpoints/roce_receiver.py`` use them): one place says what each means and its
range, so a bad option is refused with its name before anything runs."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from endpoints import wire
from endpoints.dcqcn import DcqcnConfig
from endpoints.receiver import ReceiverConfig

DSCP_DATA = 26  # the baseline's data (and ACKs): a class the fabric marks and drops, never trims
DSCP_CNP = 48  # its CNPs, as RoCE deployments give them their own high-priority class
IB_TIMEOUT_UNIT = 4.096e-6  # the IB local ACK timeout is 4.096 us x 2**timeout
RETRY_COUNT_MAX = 7  # retry_cnt is a 3-bit field
MESSAGE_PACKETS = 1024  # packets per RDMA WRITE message unless told otherwise


@dataclass(frozen=True)
class RoceSenderConfig:
    """The requester of one RC QP; times in seconds."""

    mtu: int = 1000  # payload bytes per data packet
    message_size: int = MESSAGE_PACKETS * 1000  # bytes per RDMA WRITE (First, Middle..., Last; or Only): a multiple of mtu
    window: int = 128  # PSNs outstanding (sent, not acknowledged) at most
    ack_every: int = 16  # AckReq on every n-th packet (and the last of each message and of the window)
    # The local ACK timeout: 4.096 us x 2**16, the IB timeout attribute 16 (a NIC's
    # usual 14 gives 67 ms, below what the software fabric stalls for at times)
    ack_timeout: float = IB_TIMEOUT_UNIT * (1 << 16)
    retry_count: int = RETRY_COUNT_MAX  # retries without progress before the QP goes to the error state
    cc: str = "dcqcn"  # "dcqcn" or "none" (send at the line rate)
    dcqcn: DcqcnConfig = field(default_factory=DcqcnConfig)
    burst: int = 8  # packets at most per poll when the pacing is behind
    sample_interval: float = 0.01  # the time series of acknowledged bytes and of the rate
    seed: int = 0  # QP and first PSN
    first_psn: int | None = None  # None: drawn from the seed

    def check(self) -> None:
        """Raise ValueError ("roce: ...") naming the first parameter out of range."""
        if not 0 < self.mtu <= wire.MAX_MTU:
            raise ValueError(f"roce: payload size {self.mtu} outside 1..{wire.MAX_MTU}")
        if self.message_size < self.mtu or self.message_size % self.mtu or self.message_size >= 1 << 31:
            raise ValueError(f"roce: message size {self.message_size}: a multiple of the payload size "
                             f"{self.mtu}, below 2**31 bytes")
        if not 0 < self.window <= 0xFFFF:
            raise ValueError(f"roce: window {self.window} outside 1..65535")
        if self.ack_every < 1 or self.burst < 1:
            raise ValueError("roce: ack_every and burst must be at least 1")
        if not 0 <= self.retry_count <= RETRY_COUNT_MAX:
            raise ValueError(f"roce: retry count {self.retry_count} outside 0..{RETRY_COUNT_MAX} (a 3-bit field)")
        for name in ("ack_timeout", "sample_interval"):
            if not 0 < getattr(self, name) < math.inf:
                raise ValueError(f"roce: {name} must be more than 0 seconds and finite")
        if self.cc not in ("dcqcn", "none"):
            raise ValueError(f"roce: congestion control {self.cc!r}: dcqcn or none")
        self.dcqcn.check()


@dataclass(frozen=True)
class RoceReceiverConfig:
    """The responder's parameters; times in seconds. What it accepts (largest
    transfer, expected length, window, transfers, seed, sampling) is MRC-lite's
    receiver's (``limits``); the rest is DCQCN's notification point."""

    limits: ReceiverConfig = field(default_factory=ReceiverConfig)
    cnp_interval: float = 20 * 50e-6  # N: at most one CNP per QP per this (the paper's 50 us x 20)
    cnp_tclass: int = DSCP_CNP << 2 | 0b10  # the CNPs' traffic class: DSCP 48, ECT(0)

    def check(self) -> None:
        if not 0 <= self.cnp_interval < math.inf:
            raise ValueError("roce: the CNP interval must be 0 seconds or more and finite")
        if not 0 < self.limits.sample_interval < math.inf:
            raise ValueError("roce: sample_interval must be more than 0 seconds")
        if not 0 <= self.cnp_tclass <= 0xFF:
            raise ValueError(f"roce: CNP traffic class {self.cnp_tclass} outside 0..255")
