"""MRC-lite against the RoCEv2 baseline for ``bench/experiments_goodput.py``: the same
bytes h1 -> h3, alternating rounds on one fabric, with each transfer's switch CPU
and its two ends' CPU per packet; and the link-bound fabric (every uplink of the
source leaf limited with the switches' ``--queue-rate``, ``experiments/ecmp.py``'s
``shape``), where the links and not the CPU bound the rate.

Pure formatting (``roce_text``, ``ratio``, ``table``) apart from the runs.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROCE = ["--transport", "roce"]
# The quiet fabric: DCQCN starts at a line rate above anything the host reaches, so the
# CPU and the window bound the baseline as they bound MRC-lite.
QUIET_LINE_MBPS = 1000.0


@dataclass
class Run:
    """One transfer of a round: its reports, rate, and CPU per packet (us)."""

    ok: bool
    bps: float
    seconds: float
    switches: dict[str, float]  # us per packet, by role
    ends_us: float  # the two ends' cpu_s, per packet
    sender: dict[str, Any]
    packets: int = 0  # the data packets the CPU figures are per

    @property
    def in_all(self) -> float:
        return sum(self.switches.values()) + self.ends_us

    @property
    def cores_busy(self) -> float:
        """The share of the machine's cores the transfer kept busy while it ran:
        (every process's CPU for it) / (its duration x cores)."""
        if not self.seconds:
            return 0.0
        return self.in_all * self.packets / 1e6 / (self.seconds * (os.cpu_count() or 1))


@dataclass
class Series:
    """The rounds of one transport on one fabric."""

    label: str
    runs: list[Run] = field(default_factory=list)

    def median(self, key: Callable[[Run], float]) -> float:
        return statistics.median(key(r) for r in self.runs) if self.runs else 0.0

    @property
    def bps(self) -> float:
        return self.median(lambda r: r.bps)

    @property
    def ends_us(self) -> float:
        return self.median(lambda r: r.ends_us)

    @property
    def in_all(self) -> float:
        return self.median(lambda r: r.in_all)

    @property
    def ok(self) -> bool:
        return bool(self.runs) and all(r.ok for r in self.runs)


def transfer_run(res: Any, switches: dict[str, float], packets: int) -> Run:
    """A Run from an MRC-lite or RoCE ``TransferResult`` (both report ``cpu_s`` at each end)."""
    s = res.sender
    ends = (s.get("cpu_s") or 0.0) + (res.recv_report.get("cpu_s") or 0.0)
    return Run(res.ok, s.get("goodput_bps") or 0.0, s.get("completion_time_s") or 0.0, switches,
               ends / packets * 1e6, s, packets)


def line_rate_mbps(pps: float, mtu: int) -> float:
    """The baseline's ``--line-rate`` that paces it at ``pps`` packets of ``mtu`` payload
    (it counts each packet's payload and transport header, ``wire.DATA_HDR_LEN``)."""
    from endpoints.wire import DATA_HDR_LEN

    return pps * (mtu + DATA_HDR_LEN) * 8 / 1e6


def alternate(rounds: int, runs: Sequence[tuple[Series, Callable[[Path], Run]]], workdir: Path) -> None:
    """``rounds`` rounds, each transport once per round in the given order."""
    for k in range(rounds):
        for series, run in runs:
            series.runs.append(run(workdir / f"{series.label.split()[0]}-{k}"))


def roce_text(s: dict[str, Any]) -> str:
    """What a RoCE QP's report says about how it went."""
    g = s.get("go_back_n") or {}
    state = s.get("state")
    return (f"{state}, EV {s.get('ev')}, {g.get('rewinds', 0)} go-back-N rewinds ({g.get('resent', 0)} resent, "
            f"{g.get('naks_received', 0)} NAKs, {g.get('timeouts', 0)} timeouts), longest stall "
            f"{s.get('longest_stall_s') or 0:.3f} s, {s.get('cnps_received', 0)} CNPs"
            + (f"; {s.get('error')}" if state != "complete" else ""))


def mrc_text(s: dict[str, Any]) -> str:
    r = s.get("retransmissions") or {}
    return (f"{r.get('total', 0)} retransmissions ({r.get('trim_nack', 0)} trim NACK), window now "
            f"{(s.get('window') or {}).get('now') or 0:.0f}, {s.get('evs_retired', 0)} EVs retired")


def ratio(a: float, b: float) -> float:
    return a / b if b else 0.0


def rounds_lines(series: Series, mbps: Callable[[float], float], describe: Callable[[dict[str, Any]], str]) -> list[str]:
    """One line per round: rate, verdict, the report's story, CPU per packet."""
    out = [f"  {series.label}: median {mbps(series.bps):.1f} Mb/s"]
    for k, r in enumerate(series.runs, 1):
        sw = ", ".join(f"{role} {us:.0f}" for role, us in r.switches.items())
        out.append(f"    round {k}: {mbps(r.bps):7.1f} Mb/s (verified {r.ok}; {describe(r.sender)}); "
                   f"CPU us/packet: {sw}, ends {r.ends_us:.1f}, in all {r.in_all:.0f}, cores busy {100 * r.cores_busy:.0f}%")
    return out


def table(rows: Sequence[tuple[str, str, str, str]]) -> list[str]:
    """The side-by-side table: transport, quiet fabric, link-bound fabric, ends' CPU."""
    head = ("transport", "quiet fabric", "link-bound fabric", "ends' CPU, us/packet (quiet)")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(4)]
    return ["  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in [head, *rows]]
