"""The sender's parameters and their checks, apart from the state machine that uses
them (``endpoints/sender.py``): one place says what each parameter means and what
range it must be in, so a bad option is refused with its name before anything runs."""

from __future__ import annotations

from dataclasses import dataclass

from endpoints import wire
from endpoints.congestion import CongestionConfig


@dataclass(frozen=True)
class SenderConfig:
    """Sender parameters; times in seconds."""

    mtu: int = 1000  # payload bytes per data packet
    window: int = 128  # data packets in flight, at most (the congestion window's ceiling)
    initial_window: int = 16  # the congestion window starts here (endpoints/congestion.py)
    min_window: int = 2  # congestion control never shrinks the window below this
    rate_pps: float | None = None  # pacing; None: as fast as the window allows
    burst: int = 32  # at most this many packets per poll (and the pacing bucket)
    # Ask for an ACK (BTH ack_req) on every n-th data packet (SACK covers the rest),
    # n = this or a quarter of the congestion window, whichever is smaller
    ack_every: int = 16
    # The RTO until the first RTT sample (RFC 6298's 1 s): the first packets wait in
    # queues the sender knows nothing of yet (an incast's shaped port, BMv2 on busy
    # cores), and a timeout then only resends what is still queued. Never below
    # rto_min nor above rto_max.
    rto_initial: float = 1.0
    # The RTO's floor. The timer restarts on every acknowledgement of new data
    # (endpoints/retransmit.py), so it fires only after this long with nothing
    # acknowledged: a stall of the whole fabric, or a loss no NACK reports (the tail);
    # a packet only late behind others that are acknowledged is not resent by it
    # (docs/transport.md, "Parameters")
    rto_min: float = 0.05
    rto_max: float = 1.0
    # The longest the receiver holds an ACK (mrc-recv --ack-delay, its default): added
    # to the RTO, since the packet the timer waits for may be one acknowledged late
    ack_delay: float = 0.001
    probe_interval: float = 0.02  # how often each ASSUMED_BAD EV is probed
    ev_min_active: int = 8
    # Loss NACKs that retire the EVs of a path (endpoints/path_blame.py): at least
    # retire_after of them in the rows of its EVs (a row: none of the EV's later packets
    # acknowledged), the first of their packets sent retire_delay ago or more, so a path
    # that only stalls for less than that (a software switch waiting for a CPU) delivers
    # its packets and retires nothing
    retire_after: int = 2
    retire_delay: float = 0.05
    sample_interval: float = 0.01  # time series of delivered bytes
    seed: int = 0  # QP, first PSN
    first_psn: int | None = None  # None: drawn from the seed
    spray: str = "adaptive"  # "adaptive": avoid EVs with recent CE echoes and trims; "rr": round robin
    adapt_half_life: float = 0.02  # an EV's congestion score halves in this time
    adapt_max_skip: int = 16  # an avoided EV is still used once in this many of its turns
    cc_base_rtt: float | None = None  # the network's unloaded RTT; None: the smallest RTT sample
    cc_target_ratio: float = 0.5  # delay target: this fraction of the base RTT ...
    cc_target_min: float = 100e-6  # ... and at least this (docs/transport.md, "Congestion control")
    cc_beta: float = 0.5  # multiplicative decrease per marked, delayed packet acknowledged
    # Start-up (endpoints/congestion.py): the window doubles each round trip until a round
    # trip is delayed past this many targets (or a mark, trim or queue's loss); 0: none
    cc_startup_delay: float = 0.0

    def congestion(self) -> CongestionConfig:
        """The congestion window's parameters."""
        return CongestionConfig(initial_window=float(min(self.initial_window, self.window)),
                                min_window=float(min(self.min_window, self.initial_window, self.window)),
                                max_window=float(self.window), base_rtt=self.cc_base_rtt,
                                target_ratio=self.cc_target_ratio, target_min=self.cc_target_min, beta=self.cc_beta,
                                startup_delay=self.cc_startup_delay)

    def check(self) -> None:
        """Raise ValueError ("sender: ...") naming the first parameter out of range."""
        if not 0 < self.mtu <= wire.MAX_MTU:
            raise ValueError(f"sender: payload size {self.mtu} outside 1..{wire.MAX_MTU}")
        for name in ("probe_interval", "rto_min", "rto_initial", "sample_interval"):
            if not getattr(self, name) > 0:
                raise ValueError(f"sender: {name} must be more than 0 seconds")
        if not 0 <= self.ack_delay < float("inf"):
            raise ValueError("sender: ack_delay (the receiver's ACK delay) must be 0 seconds or more, and finite")
        if self.rate_pps is not None and not 0 < self.rate_pps < float("inf"):
            raise ValueError("sender: the pacing rate must be more than 0 packets/s and finite (or none)")
        if self.burst < 1 or self.ack_every < 1 or self.min_window < 1 or self.initial_window < 1:
            raise ValueError("sender: burst, ack_every, initial_window and min_window must be at least 1")
        if self.ev_min_active < 1:
            raise ValueError("sender: ev_min_active must be at least 1 (no GOOD EV: nothing can be sent)")
        if self.retire_after < 1:
            raise ValueError("sender: retire_after must be at least 1 (loss NACKs in a row that retire an EV)")
        if not 0 <= self.retire_delay < float("inf"):
            raise ValueError("sender: retire_delay must be 0 seconds or more, and finite")
        if not 0 < self.window <= 0xFFFF:
            raise ValueError(f"sender: window {self.window} outside 1..65535")
        try:
            self.congestion().check()
        except ValueError as exc:
            raise ValueError(f"sender: {exc}") from None
        if self.spray not in ("adaptive", "rr"):
            raise ValueError(f"sender: spray {self.spray!r}: adaptive or rr")
        if not self.adapt_half_life > 0 or self.adapt_max_skip < 1:
            raise ValueError("sender: adapt_half_life must be more than 0 seconds and adapt_max_skip at least 1")
