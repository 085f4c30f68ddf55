"""The workload agents of a running fabric: one ``python -m workloads.agent`` per
host (agent.py), started in its Mininet host, spoken to over pipes.

Why a reader thread per agent: the runner waits on all of them and on its own timers
at once; each thread turns its agent's lines into (host, event) items on one queue.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from topologies.transfer import BIN, REPO
from workloads.transports import Transport

READY_WAIT = 60.0  # seconds for every agent to start (Python start-up on a busy machine)


@dataclass
class AgentSettings:
    transport: Transport
    timeout: float  # seconds a transfer may take before its sender gives up
    rto_min: float
    nack_delay: float
    ack_delay: float
    shape: dict[str, Any]  # the fabric's shape (the agents' EV sets come from its address plan)


@dataclass
class Agents:
    fn: Any
    hosts: Sequence[str]
    settings: AgentSettings
    workdir: Path
    events: queue.Queue[tuple[str, dict[str, Any]]] = field(default_factory=queue.Queue)
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    logs: list[IO[bytes]] = field(default_factory=list)

    def start(self) -> None:
        """Start an agent in every host; RuntimeError naming any that did not get ready."""
        s = self.settings
        self.workdir.mkdir(parents=True, exist_ok=True)
        for h in self.hosts:
            cmd = [str(BIN / "python"), "-m", "workloads.agent", h, self.fn.address(h), s.transport.name,
                   f"{s.timeout:g}", f"{s.rto_min:g}", f"{s.nack_delay:g}", f"{s.ack_delay:g}", json.dumps(s.shape)]
            log = open(self.workdir / f"agent-{h}.log", "wb")  # (closed in stop)
            self.logs.append(log)
            p = self.fn.host(h).popen(cmd, cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log)
            self.procs[h] = p
            threading.Thread(target=self._read, args=(h, p), daemon=True).start()
        ready: set[str] = set()
        deadline = time.monotonic() + READY_WAIT
        while len(ready) < len(self.hosts):
            left = deadline - time.monotonic()
            try:
                h, ev = self.events.get(timeout=max(left, 0.001))
            except queue.Empty:
                raise RuntimeError(f"workload agents not ready after {READY_WAIT:g} s: "
                                   f"{sorted(set(self.hosts) - ready)}") from None
            if ev.get("ev") == "ready":
                ready.add(h)
            elif ev.get("ev") in ("error", "exit"):
                raise RuntimeError(f"workload agent in {h}: {ev.get('text')}")

    def _read(self, host: str, p: subprocess.Popen[bytes]) -> None:
        assert p.stdout is not None
        for line in p.stdout:
            try:
                self.events.put((host, json.loads(line)))
            except ValueError:
                self.events.put((host, {"ev": "error", "text": line.decode(errors="replace").strip()[:200]}))
        self.events.put((host, {"ev": "exit", "text": f"exited with status {p.wait()}"}))

    def send(self, src: str, flow: int, dst: str, size: int, seed: int = 0) -> None:
        p = self.procs[src]
        assert p.stdin is not None
        p.stdin.write((json.dumps({"op": "send", "flow": flow, "dst": dst, "to": self.fn.address(dst),
                                   "size": size, "seed": seed}) + "\n").encode())
        p.stdin.flush()

    def stop(self) -> None:
        for p in self.procs.values():
            try:
                if p.stdin is not None:
                    p.stdin.write(b'{"op": "quit"}\n')
                    p.stdin.close()
            except OSError:
                pass
        for p in self.procs.values():
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for log in self.logs:
            log.close()
