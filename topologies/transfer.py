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
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
UDP_PORT_MRC = 4791
LISTEN_WAIT = 20.0  # seconds a receiver may take to bind its port (Python start-up on a busy machine)


def udp_listening(proc_net: str, port: int) -> bool:
    """Whether a UDP socket is bound to ``port``, from the text of /proc/net/udp6 and
    udp (one network namespace's: local_address is ``HEXADDR:HEXPORT``)."""
    want = f":{port:04X}"
    for line in proc_net.splitlines():
        fields = line.split()
        if len(fields) > 1 and fields[1].endswith(want):
            return True
    return False


def listening(fn: Any, hosts: Sequence[str], port: int) -> Callable[[], bool]:
    """A check: a UDP socket bound to ``port`` in each of the fabric's ``hosts``
    (Mininet hosts: their own network namespaces)."""
    def check() -> bool:
        return all(udp_listening(fn.host(h).cmd("cat /proc/net/udp6 /proc/net/udp"), port) for h in hosts)

    return check


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
        """Start the receiver, then the sender once the receiver listens: a sender
        that starts first loses its OPENs to "port unreachable" and tries again only
        after a retransmission timeout, which its completion time would include."""
        self.start_receiver()
        self.wait_listening()
        self.start_sender()
        return self

    def receiver_port(self) -> int:
        args = self.recv_args
        return int(args[args.index("--port") + 1]) if "--port" in args[:-1] else UDP_PORT_MRC

    def wait_listening(self, timeout: float = LISTEN_WAIT) -> bool:
        """Wait until the receiver's port is bound in its host (or it exited)."""
        check = listening(self.fn, [self.dst], self.receiver_port())
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if check():
                return True
            if self.receiver is not None and self.receiver.poll() is not None:
                return False
            time.sleep(0.02)
        return False

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
