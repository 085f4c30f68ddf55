"""IPv6 ping inside Mininet hosts, and reading its result.

Why a module: the two-host network, the fabric network's ping matrix, the demo and the
tests all ping the same way and read iputils' summary line the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol


class ShellHost(Protocol):
    name: str

    def cmd(self, *args: str) -> str: ...


@dataclass(frozen=True)
class PingResult:
    """Outcome of one `ping -6` run inside a host."""

    source: str
    target: str
    sent: int
    received: int
    rtt_avg_ms: float | None
    output: str

    @property
    def ok(self) -> bool:
        return self.sent > 0 and self.received == self.sent

    def summary(self) -> str:
        loss = 100.0 * (self.sent - self.received) / self.sent if self.sent else 100.0
        rtt = f", rtt avg {self.rtt_avg_ms:.3f} ms" if self.rtt_avg_ms is not None else ""
        return f"{self.source} -> {self.target}: {self.received}/{self.sent} replies, {loss:.0f}% loss{rtt}"


_SENT_RE = re.compile(r"(\d+) packets transmitted, (\d+) (?:packets )?received")
_RTT_RE = re.compile(r"= [\d.]+/([\d.]+)/")


def parse_ping(source: str, target: str, output: str) -> PingResult:
    """Read the counts and average RTT from iputils ping output."""
    sent = received = 0
    m = _SENT_RE.search(output)
    if m:
        sent, received = int(m.group(1)), int(m.group(2))
    r = _RTT_RE.search(output)
    return PingResult(source, target, sent, received, float(r.group(1)) if r else None, output)


def ping6(host: ShellHost, address: str, count: int = 3) -> PingResult:
    """Run `ping -6` inside a Mininet host (numeric output, 0.2 s apart, 2 s wait)."""
    out = host.cmd(f"ping -6 -n -c {count} -i 0.2 -W 2 {address}")
    return parse_ping(host.name, address, out)


