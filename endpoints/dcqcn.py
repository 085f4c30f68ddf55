"""DCQCN's reaction point: the RoCE baseline sender's rate (Zhu et al., SIGCOMM 2015).

Written here from the paper's description, as a pure state machine (time passed in).
The notification point, the receiver's side, is in ``endpoints/roce_receiver.py``: a
data packet that arrives with ECN CE makes it send a CNP to the sender's QP, at most
one per QP every ``cnp_interval``.

The sender sends at the current rate RC (bits per second, pacing its packets) and
keeps a target rate RT and alpha, its estimate of how congested the path is:

- **a CNP**: RT = RC; RC = RC x (1 - alpha / 2); alpha = (1 - g) x alpha + g; the
  rate-increase timer, the byte counter and both their stage counts start again;
- **no CNP for K** (the alpha timer): alpha = (1 - g) x alpha, every K without one;
- **a rate increase** each time the timer (every T) or the byte counter (every B
  bytes sent) expires; that counter's stage count goes up by one, then, with t and
  b the two stage counts:
  - fast recovery, while max(t, b) <= F: RC = (RT + RC) / 2;
  - hyper increase, once min(t, b) > F: RT = RT + (min(t, b) - F) x R_HAI, then
    RC = (RT + RC) / 2;
  - additive increase otherwise (one of them past F): RT = RT + R_AI, then
    RC = (RT + RC) / 2;
  neither rate goes above the line rate, and RC never below ``min_rate``.

RC and RT start at the line rate and alpha at 1, as in the paper. The timers are
computed when read (``advance``): every whole period passed since the last one is
applied, in order, so the outcome is the same however often the sender looks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class DcqcnConfig:
    """The reaction point's parameters; rates in bits per second, times in seconds.

    The defaults are the paper's for a 40 Gb/s NIC with its times x 20 and its rates
    and byte counter scaled to a 100 Mb/s line: the emulator's round trips are
    milliseconds where a datacenter's are microseconds (docs/transport.md, "The
    RoCEv2 baseline"). ``PAPER`` holds the paper's own values."""

    line_rate: float = 100e6  # RC and RT start here and never exceed it
    min_rate: float = 100e3  # RC's floor
    g: float = 1 / 256  # alpha's gain
    alpha_timer: float = 20 * 55e-6  # K: alpha decays once per K without a CNP
    increase_timer: float = 20 * 55e-6  # T: a rate increase every T
    byte_counter: int = 500_000  # B: a rate increase every B bytes sent
    fast_recovery: int = 5  # F: the stages of fast recovery
    rate_ai: float = 100e3  # R_AI: the additive step of RT
    rate_hai: float = 1e6  # R_HAI: the hyper step of RT

    def check(self) -> None:
        """Raise ValueError naming the first parameter out of range."""
        if not 0 < self.line_rate < math.inf:
            raise ValueError(f"DCQCN: line rate {self.line_rate} b/s must be more than 0 and finite")
        if not 0 < self.min_rate <= self.line_rate:
            raise ValueError(f"DCQCN: the minimum rate {self.min_rate} b/s must be within 0..the line rate")
        if not 0 < self.g <= 1:
            raise ValueError(f"DCQCN: g {self.g} outside (0, 1]")
        for name in ("alpha_timer", "increase_timer"):
            if not 0 < getattr(self, name) < math.inf:
                raise ValueError(f"DCQCN: {name} must be more than 0 seconds and finite")
        if self.byte_counter < 1 or self.fast_recovery < 0:
            raise ValueError("DCQCN: the byte counter must be at least 1 byte and F at least 0")
        for name in ("rate_ai", "rate_hai"):
            if not 0 <= getattr(self, name) < math.inf:
                raise ValueError(f"DCQCN: {name} must be 0 b/s or more and finite")


# The paper's values (40 Gb/s NICs): g, K = 55 us, T = 55 us, B = 10 MB, F = 5,
# R_AI = 40 Mb/s; R_HAI, not among them, ten times R_AI as the defaults here.
PAPER = DcqcnConfig(line_rate=40e9, min_rate=40e6, g=1 / 256, alpha_timer=55e-6, increase_timer=55e-6,
                    byte_counter=10_000_000, fast_recovery=5, rate_ai=40e6, rate_hai=400e6)
CNP_INTERVAL_PAPER = 50e-6  # N: the notification point's least time between two CNPs of one QP


class Dcqcn:
    """The reaction point of one QP: ``rate`` is RC, the rate to pace at."""

    def __init__(self, config: DcqcnConfig, now: float) -> None:
        config.check()
        self.cfg = config
        self.rate = config.line_rate  # RC
        self.target = config.line_rate  # RT
        self.alpha = 1.0
        self.timer_stage = 0  # t: timer expiries since the last CNP
        self.byte_stage = 0  # b: byte-counter expiries since the last CNP
        self._bytes = 0  # sent since the byte counter last expired
        self._timer_mark = now  # the rate-increase timer's last expiry (or the last CNP)
        self._alpha_mark = now  # the alpha timer's last expiry (or the last CNP)
        self.cnps = 0
        self.min_rate = self.rate  # the lowest RC so far
        self.increases = {"fast_recovery": 0, "additive": 0, "hyper": 0}

    def advance(self, now: float) -> None:
        """Apply every alpha and rate-increase timer expiry up to ``now``."""
        cfg = self.cfg
        n = int((now - self._alpha_mark) / cfg.alpha_timer)
        if n > 0:
            self.alpha *= (1 - cfg.g) ** n
            self._alpha_mark += n * cfg.alpha_timer
        n = int((now - self._timer_mark) / cfg.increase_timer)
        if n > 0:
            self._timer_mark += n * cfg.increase_timer
            for _ in range(n):
                if self.rate >= cfg.line_rate and self.target >= cfg.line_rate:
                    break  # at the line rate: further increases change nothing
                self.timer_stage += 1
                self._increase()

    def on_cnp(self, now: float) -> None:
        """A CNP arrived for this QP: cut the rate by alpha / 2, then raise alpha."""
        self.advance(now)
        cfg = self.cfg
        self.cnps += 1
        self.target = self.rate
        self.rate = max(cfg.min_rate, self.rate * (1 - self.alpha / 2))
        self.alpha = (1 - cfg.g) * self.alpha + cfg.g
        self.timer_stage = self.byte_stage = 0
        self._bytes = 0
        self._timer_mark = self._alpha_mark = now
        self.min_rate = min(self.min_rate, self.rate)

    def on_sent(self, nbytes: int) -> None:
        """``nbytes`` left at the current rate: the byte counter."""
        self._bytes += nbytes
        while self._bytes >= self.cfg.byte_counter:
            self._bytes -= self.cfg.byte_counter
            self.byte_stage += 1
            self._increase()

    def _increase(self) -> None:
        cfg = self.cfg
        t, b = self.timer_stage, self.byte_stage
        if max(t, b) <= cfg.fast_recovery:
            self.increases["fast_recovery"] += 1
        elif min(t, b) > cfg.fast_recovery:
            self.target += (min(t, b) - cfg.fast_recovery) * cfg.rate_hai
            self.increases["hyper"] += 1
        else:
            self.target += cfg.rate_ai
            self.increases["additive"] += 1
        self.target = min(self.target, cfg.line_rate)
        self.rate = min((self.target + self.rate) / 2, cfg.line_rate)
