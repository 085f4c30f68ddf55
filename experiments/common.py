"""What every experiment does: start a programmed fabric, run transfers in its hosts,
read counters, write the results.

Why one module: the five experiments differ in what they break or measure, not in how
a transfer is run. A transfer is ``mrc-recv`` in one Mininet host and ``mrc-send`` in
another (README, "MRC-lite endpoints"), each writing its JSON report; ``Transfer``
starts them without waiting, so an experiment can cut a link or read counters while
the data flows. ``write_results`` puts the raw numbers (JSON) and the plot (PNG)
under ``results/``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import secrets
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.counters import Counts, read_all
from controller.topology import Topology, from_parameters

log = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "results"
BIN = Path(sys.executable).parent
# The experiments' fabric: 4 planes x (2 leaves + 2 spines), 2 hosts per leaf (h1, h2
# on leaf 0; h3, h4 on leaf 1): 8 paths between hosts of different leaves.
SHAPE = dict(planes=4, spines=2, leaves=2, hosts_per_leaf=2)


def topology(**overrides: Any) -> Topology:
    return from_parameters(**{**SHAPE, **overrides})


def private_prefix() -> str:
    """A node-name prefix of its own, so a network of another run is never touched."""
    return "mrcx" + secrets.token_hex(1)[:2]


@contextmanager
def programmed_fabric(topo: Topology, prefix: str | None = None, run_dir: Path | None = None) -> Iterator[Any]:
    """The fabric in Mininet (embedded target, free gRPC ports), every table installed;
    always stopped and removed."""
    from topologies.fabric_net import fabric_network, install_tables

    prefix = prefix or private_prefix()
    with tempfile.TemporaryDirectory(prefix="mrc-exp-") as tmp:
        with fabric_network(topo, prefix=prefix, target="embedded", grpc_base=0,
                            run_dir=run_dir or Path(tmp)) as fn:
            rep = install_tables(fn)
            if rep.failed:
                raise RuntimeError(f"install failed: {rep.summary()}")
            yield fn


def read_counters(fn: Any, names: Sequence[str] | None = None) -> dict[str, Counts]:
    """Every counter of every switch (or of ``names``), over P4Runtime."""
    names = list(names) if names is not None else list(fn.inventory.switches)
    return asyncio.run(read_all([fn.inventory.switches[n] for n in names]))


# ---- transfers -----------------------------------------------------------------------


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
    receiver: subprocess.Popen | None = None
    senders: list[subprocess.Popen] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)

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
        cmd = [str(BIN / "mrc-send"), "--to", self.fn.address(self.dst), "--bind", self.fn.address(src),
               "--bytes", str(self.nbytes), "--timeout", str(self.timeout), "--report",
               str(self.send_report_path(src)), "--quiet", *evs, "--seed", str(len(self.senders)), *args]
        self.senders.append(self.fn.host(src).popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        self.sources.append(src)

    def topology_args(self) -> list[str]:
        """The fabric's shape, for the sender's EV set (the address plan of the same topology)."""
        t = self.fn.topo
        return ["--planes", str(t.planes), "--spines", str(t.spines), "--leaves", str(len(t.leaves)),
                "--hosts-per-leaf", str(t.max_hosts_per_leaf)]

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
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


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


# ---- figures ---------------------------------------------------------------------------


def mbps(bps: float | None) -> float:
    return round((bps or 0.0) / 1e6, 3)


def spread(values: Sequence[float]) -> float:
    """Largest relative distance from the mean (0.1: every value within 10%)."""
    if not values:
        return 0.0
    mean = sum(values) / len(values)
    return max(abs(v - mean) for v in values) / mean if mean else float("inf")


def write_results(name: str, data: dict[str, Any], figure: Any, out_dir: Path = RESULTS) -> tuple[Path, Path]:
    """``results/<name>.json`` (raw numbers) and ``results/<name>.png`` (the plot)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    js, png = out_dir / f"{name}.json", out_dir / f"{name}.png"
    js.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    figure.savefig(png, dpi=110, bbox_inches="tight")
    return js, png


def pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend (no display in a Mininet run)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def parser(module: str, description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"python -m {module}", description=description)
    p.add_argument("--out-dir", type=Path, default=RESULTS, help="where the JSON and PNG go (default results/)")
    p.add_argument("--prefix", default=None, help="Mininet node-name prefix (default: a random mrcx...)")
    p.add_argument("-v", "--verbose", action="store_true", help="log the network's start and the controller")
    return p


def setup(args: argparse.Namespace) -> None:
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(name)s: %(message)s")
    if os.geteuid() != 0:
        raise SystemExit("error: the experiments run a Mininet network: run them as root")
