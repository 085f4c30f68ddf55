"""EV probes from a running network's hosts, and what they say about its links.

Why here: ``mrcctl probe``, ``locate`` and ``guard`` probe paths from hosts of a
running Mininet network. Each host is a network namespace; the network's run
directory says which process is in it (``mininet.json``, topologies/fabric_net.py),
so a probe agent runs there with ``nsenter`` (endpoints/probe.py, the transport's
PROBE on the EV's own path): one per host of the sweep, each probing its share and
answering the others'. A destination whose MRC port a receiver already holds (a
transfer's ``mrc-recv``) is answered by that receiver.

``observations`` turns the answers into the paths fabric/locate.py reasons about;
``link_loss`` turns fabric counters into its tie-breaking evidence.
"""

from __future__ import annotations

import json
import select
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.counters import Counts
from fabric.locate import Observation, counter_loss
from fabric.paths import PathInfo, links, paths
from fabric.topology import Topology, TopologyError

MININET_STATE = "mininet.json"
REPO = Path(__file__).resolve().parents[1]


class ProbeError(Exception):
    """A probe that cannot be sent: one line saying why and what to do."""


@dataclass(frozen=True)
class HostPlace:
    name: str
    pid: int
    address: str


def host_places(run_dir: Path) -> dict[str, HostPlace]:
    """Each host's namespace (a process in it) and address, from the running network's record."""
    path = run_dir / MININET_STATE
    try:
        data = json.loads(path.read_text())
        hosts = data["hosts"]
        return {n: HostPlace(n, int(h["pid"]), str(h["address"])) for n, h in hosts.items()}
    except FileNotFoundError:
        raise ProbeError(f"no running network ({path} is missing): start one (make run) or give its "
                         "state file with --state") from None
    except (ValueError, KeyError, TypeError):
        raise ProbeError(f"{path}: damaged or from an older network (no hosts' namespaces); restart the network") \
            from None


def in_host(place: HostPlace, cmd: Sequence[str]) -> list[str]:
    return ["nsenter", "-t", str(place.pid), "-n", *cmd]


@dataclass(frozen=True)
class EvResult:
    """One EV of ``src`` towards ``dst``: its path and what its probes gave."""

    src: str
    dst: str
    path: PathInfo
    sent: int
    answered: int
    rtts: tuple[float | None, float | None, float | None]  # min, avg, max (seconds)
    error: str | None = None

    @property
    def loss(self) -> float | None:
        return 1 - self.answered / self.sent if self.sent else None

    def json(self) -> dict[str, Any]:
        lo, avg, hi = self.rtts
        return {"src": self.src, "dst": self.dst, "ev": self.path.ev, "plane": self.path.plane,
                "switches": list(self.path.hops[1:-1]), "links": list(self.path.links), "sent": self.sent,
                "answered": self.answered, "loss": self.loss, "rtt_min_ms": _ms(lo), "rtt_avg_ms": _ms(avg),
                "rtt_max_ms": _ms(hi), "error": self.error}


def _ms(v: float | None) -> float | None:
    return None if v is None else round(v * 1000, 3)


class _Agent:
    """endpoints/probe.py's agent in one host: prober of its plan, receiver of the others'."""

    def __init__(self, place: HostPlace, spec: list[dict[str, Any]], count: int, interval: float,
                 timeout: float, serve: bool) -> None:
        self.place = place
        cmd = [sys.executable, "-m", "endpoints.probe", "--bind", place.address, "--plan", json.dumps(spec),
               "--count", str(count), "--interval", f"{interval:g}", "--timeout", f"{timeout:g}",
               *([] if serve else ["--probe-only"])]
        self.proc = subprocess.Popen(in_host(place, cmd), cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)

    def line(self, deadline: float) -> str:
        """The agent's next line of output ('' when it ended or the deadline passed)."""
        assert self.proc.stdout is not None
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
            return ""
        return self.proc.stdout.readline()

    def go(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def failure(self) -> str:
        if self.proc.poll() is None:
            return f"no answer from the probe agent in {self.place.name}"
        assert self.proc.stderr is not None
        err = self.proc.stderr.read().strip()
        if "setns" in err or "nsenter" in err:
            return f"cannot enter {self.place.name}'s namespace (process {self.place.pid}); is the network running?"
        return f"probes from {self.place.name}: {err.splitlines()[-1] if err else 'the agent ended'}"

    def stop(self) -> None:
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def sweep(topo: Topology, run_dir: Path, plan: Mapping[str, Mapping[str, Sequence[PathInfo]]], *, count: int,
          interval: float = 0.01, timeout: float = 0.5, budget: float = 60.0, serve: bool = True) -> list[EvResult]:
    """Probe ``plan`` (source -> destination -> the EVs' paths) from every source at
    once, each EV ``count`` times (an answer later than ``timeout`` is lost). Every
    host of the plan runs a probe agent; a destination's receiver already running
    answers in its place. ``serve`` False: only the sources run agents, and those never
    take the MRC port (running receivers answer; a transfer about to start in a host
    finds its port free)."""
    places = host_places(run_dir)
    hosts = sorted({*plan, *(d for m in plan.values() for d in m)} if serve else set(plan))
    for h in hosts:
        if h not in places:
            raise ProbeError(f"no host {h!r} in the running network: hosts are {', '.join(sorted(places))}")
    deadline = time.monotonic() + budget
    agents: dict[str, _Agent] = {}
    try:
        for h in hosts:
            spec = [{"to": places[d].address, "evs": [p.ev for p in ps]} for d, ps in plan.get(h, {}).items()]
            agents[h] = _Agent(places[h], spec, count, interval, timeout, serve)
        for a in agents.values():
            if a.line(min(deadline, time.monotonic() + 30)).strip() != "ready":
                raise ProbeError(a.failure())
        for a in agents.values():
            a.go()
        out: list[EvResult] = []
        for src in plan:
            text = agents[src].line(deadline)
            if not text:
                raise ProbeError(agents[src].failure() if agents[src].proc.poll() is not None else
                                 f"the probes from {src} took longer than the budget ({budget:g} s)")
            out += _results(src, plan[src], json.loads(text), places)
        return out
    finally:
        for a in agents.values():
            a.stop()


def _results(src: str, dsts: Mapping[str, Sequence[PathInfo]], data: Mapping[str, Any],
             places: Mapping[str, HostPlace]) -> list[EvResult]:
    by_addr = {places[d].address: d for d in dsts}
    out = []
    for r in data["results"]:
        dst = by_addr[r["to"]]
        by_ev = {p.ev: p for p in dsts[dst]}
        for e in r["evs"]:
            out.append(EvResult(src, dst, by_ev[e["ev"]], int(e["sent"]), int(e["answered"]),
                                (e["rtt_min"], e["rtt_avg"], e["rtt_max"]), r["error"] if not r["opened"] else None))
    return out


def plan_for(topo: Topology, pairs: Sequence[tuple[str, str]], evs: Sequence[int] | None = None,
             denied: Sequence[str] = ()) -> dict[str, dict[str, list[PathInfo]]]:
    """Source -> destination -> the model's paths of ``evs`` (all of the pair's when None),
    but those over a ``denied`` link: the NICs have no entry for them, so a probe on
    such an EV goes over the NIC's spraying, not over its path."""
    plan: dict[str, dict[str, list[PathInfo]]] = {}
    avoid = set(denied)
    for src, dst in pairs:
        if src == dst:
            raise TopologyError(f"{src} and {dst} are the same host; give two different hosts")
        ps = paths(topo, topo.host(src), topo.host(dst))
        if evs is not None:
            known = {p.ev for p in ps}
            missing = [e for e in evs if e not in known]
            if missing:
                raise TopologyError(f"{src}'s NIC has no EV {missing[0]:#06x} towards {dst}; its EVs are "
                                    f"{ps[0].ev:#06x}..{ps[-1].ev:#06x} (see `mrcctl paths {src} {dst}`)")
            ps = [p for p in ps if p.ev in set(evs)]
        ps = [p for p in ps if not avoid & set(p.links)]
        if ps:
            plan.setdefault(src, {})[dst] = ps
    return plan


def observations(results: Sequence[EvResult]) -> list[Observation]:
    """An EV none of whose probes was answered: a failed path; one answered: a working one.
    A destination that never opened (no receiver answered at all) gives no evidence."""
    return [Observation(frozenset(r.path.links), r.answered > 0, f"{r.src}->{r.dst} EV {r.path.ev:#06x}")
            for r in results if r.sent and r.error is None]


def link_loss(topo: Topology, d: Mapping[str, Counts]) -> dict[str, tuple[int, int]]:
    """Per leaf-spine cable, from counter deltas: (packets one end sent onto it, packets
    the other end received from it) in the direction that lost more."""
    out = {}
    for k in links(topo):
        if k.kind != "fabric":
            continue
        tx_a = d.get(k.a, {}).get("FabricEgress.tx_port", {}).get(k.a_port, (0, 0))[0]
        rx_b = d.get(k.b, {}).get("FabricIngress.rx_port", {}).get(k.b_port, (0, 0))[0]
        tx_b = d.get(k.b, {}).get("FabricEgress.tx_port", {}).get(k.b_port, (0, 0))[0]
        rx_a = d.get(k.a, {}).get("FabricIngress.rx_port", {}).get(k.a_port, (0, 0))[0]
        out[k.name] = counter_loss(tx_a, rx_b, tx_b, rx_a)
    return out


__all__ = ["EvResult", "HostPlace", "ProbeError", "host_places", "link_loss", "observations", "plan_for", "sweep"]
