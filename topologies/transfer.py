"""One MRC-lite transfer between two hosts of a running fabric: ``mrc-recv`` in one
Mininet host, ``mrc-send`` in another, each writing its JSON report.

Why here: the `make run` demo (topologies/demo.py) and the experiments
(experiments/) run transfers the same way; ``Transfer`` starts both sides without
waiting, so the caller can cut a link or read counters while the data flows, then
``wait`` gives exit statuses and reports (docs/endpoints.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

@dataclass
class Transfer:
    """One ``mrc-send`` -> ``mrc-recv`` transfer between two fabric hosts, running."""

    fn: Any
    src: str
    dst: str
    nbytes: int
    workdir: Path
    send_args: list[str] = field(default_factory=list)
    recv_args: list[str] = field(default_factory=list)
    timeout: float = 120.0
    count: int = 1  # transfers the receiver waits for (incast: one per sender)
    receiver: subprocess.Popen[bytes] | None = None
    senders: list[subprocess.Popen[bytes]] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    launcher: list[str] = field(default_factory=list)  # before mrc-send's command (experiments/start_together.py)

    def __post_init__(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)

    @property
    def recv_report_path(self) -> Path:
        return self.workdir / f"recv-{self.dst}.json"

    def send_report_path(self, src: str) -> Path:
        return self.workdir / f"send-{src}-{self.dst}.json"

    def start_receiver(self) -> None:
        dst = self.fn.address(self.dst)
        cmd = [str(BIN / "mrc-recv"), "--listen", dst, "--count", str(self.count), "--timeout", str(self.timeout),
               "--report", str(self.recv_report_path), "--quiet", *self.recv_args]
        self.receiver = self.fn.host(self.dst).popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def start_sender(self, src: str | None = None, extra: Sequence[str] = ()) -> None:
        src = src or self.src
        args = [*self.send_args, *extra]
        # a plain --ev-list replaces the address plan's EVs (no topology options then)
        evs = [] if "--ev-list" in args else [*self.topology_args(), "--src-host", src, "--dst-host", self.dst]
        size = [] if "--in" in args else ["--bytes", str(self.nbytes)]  # --in FILE: the bytes of a file
        cmd = [*self.launcher, str(BIN / "mrc-send"), "--to", self.fn.address(self.dst), "--bind", self.fn.address(src),
               *size, "--timeout", str(self.timeout), "--report",
               str(self.send_report_path(src)), "--quiet", *evs, "--seed", str(len(self.senders)), *args]
        self.senders.append(self.fn.host(src).popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        self.sources.append(src)

    def topology_args(self) -> list[str]:
        """The fabric's shape, for the sender's EV set (the address plan of the same topology)."""
        t = self.fn.topo
        return ["--planes", str(t.planes), "--spines", str(t.spines), "--leaves", str(len(t.leaves)),
                "--hosts-per-leaf", str(t.max_hosts_per_leaf), "--evs", str(t.evs_per_nic), "--ev-mode", t.ev_mode]

    def start(self) -> Transfer:
        self.start_receiver()
        self.start_sender()
        return self

    def wait(self) -> TransferResult:
        """Wait for every process (killing any left after the timeout); read the reports."""
        outs: list[tuple[int, str]] = []
        try:
            for p in [*self.senders, self.receiver]:
                assert p is not None
                try:
                    _, err = p.communicate(timeout=self.timeout + 30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    _, err = p.communicate()
                outs.append((p.returncode, err.decode(errors="replace").strip()))
        finally:
            self.kill()
        sends = [_load(self.send_report_path(s)) for s in self.sources]
        return TransferResult(self.src, self.dst, self.nbytes, [rc for rc, _ in outs[:-1]], outs[-1][0], sends,
                              _load(self.recv_report_path), [e for _, e in outs if e])

    def kill(self) -> None:
        for p in [*self.senders, self.receiver]:
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()


def _load(path: Path) -> dict[str, Any]:
    """A report, or {} when it is missing, unreadable or not a JSON object."""
    try:
        report = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return report if isinstance(report, dict) else {}


@dataclass
class TransferResult:
    """Exit statuses and reports of one transfer (or one incast)."""

    src: str
    dst: str
    nbytes: int
    send_codes: list[int]
    recv_code: int
    send_reports: list[dict[str, Any]]
    recv_report: dict[str, Any]
    errors: list[str]

    @property
    def ok(self) -> bool:
        """Every sender and the receiver exited 0: every byte arrived and its SHA-256 matched."""
        return all(c == 0 for c in self.send_codes) and self.recv_code == 0 and bool(self.recv_report.get("ok"))

    @property
    def sender(self) -> dict[str, Any]:
        return self.send_reports[0] if self.send_reports else {}

    def summary(self) -> str:
        s = self.sender
        return (f"{self.src}->{self.dst} {self.nbytes} B: ok={self.ok} codes={self.send_codes}/{self.recv_code} "
                f"completion={s.get('completion_time_s')} goodput={s.get('goodput_bps')} "
                f"retx={s.get('retransmissions')} errors={self.errors[-2:]}")


def run_transfer(fn: Any, src: str, dst: str, nbytes: int, workdir: Path, *, send_args: Sequence[str] = (),
                 recv_args: Sequence[str] = (), timeout: float = 120.0) -> TransferResult:
    return Transfer(fn, src, dst, nbytes, workdir, list(send_args), list(recv_args), timeout).start().wait()
