"""A job on a running fabric: the agents started in its hosts, each flow started when
the scheduler says, arrivals matched to flows, a cable cut and restored on time, the
links' counters read around it; the raw record ``figures.report`` turns into figures.

A flow has arrived when its receiver has every byte and the SHA-256 the sender
announced matched (``verified``); its completion time runs from its sender's start.
Arrivals are matched to flows by that SHA-256 (every flow's bytes are its own).
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from endpoints.transport import SenderConfig
from fabric.paths import paths
from controller.cable_cuts import set_link
from workloads import fabric_links
from workloads.agents import Agents, AgentSettings
from workloads.schedule import Flow, Schedule
from workloads.scheduler import Scheduler
from workloads.transports import Transport

ITERATION_KEYS = 40_000  # a flow's key: iteration * ITERATION_KEYS + id (its data's seed, its per-flow port)
BACKGROUND_KEY = 30_000  # background flows: keys from here
QP_FIELDS = ("qp_ev", "source_port", "qp_state", "timeouts", "longest_stall_s", "connect_s",
             "opens_sent")  # a RoCE QP's (roce_flows.py)
MRC_FIELDS = ("resent_by", "ev_events", "rto_s", "srtt_s", "control")  # an MRC-lite sender's: its resends by cause, its EVs' state changes


@dataclass(frozen=True)
class Cut:
    """Cable ``link`` down ``at`` seconds after the job starts, up again ``down_for`` later (None: at the end)."""

    link: str
    at: float
    down_for: float | None = None


@dataclass(frozen=True)
class JobSpec:
    schedule: Schedule
    hosts: tuple[str, ...]  # rank -> the fabric's host
    transport: Transport
    iterations: int = 1
    timeout: float = 60.0  # seconds without an arrival before the job is given up
    cut: Cut | None = None
    background: tuple[tuple[str, str], ...] = ()  # host pairs with a flow running through the job
    background_bytes: int = 500_000
    # The senders' RTO floor: the transport's own. A timeout blames no EV, a loss NACK
    # does, and a receiver NACKs a hole only after its reordering window (which the
    # agents carry from a peer's transfers to its next, tens of ms on a loaded
    # machine); the sender's timer restarts on every acknowledgement, so while other
    # paths are acknowledged the NACKs come first (docs/workloads.md, "Timers").
    rto_min: float = SenderConfig.rto_min
    nack_delay: float = 0.005
    ack_delay: float = 0.001  # an arrival without ack_req is acknowledged within this (the receivers')
    seed: int = 0  # the senders' seeds and the data's


Progress = Callable[[int, int, int], None]  # (flows arrived, flows in the job, iterations done)


class _Run:
    """One job's run: the loop and what it records."""

    def __init__(self, fn: Any, spec: JobSpec, agents: Agents, progress: Progress | None) -> None:
        self.fn, self.spec, self.agents, self.progress = fn, spec, agents, progress
        self.sched = Scheduler(spec.schedule, spec.iterations)
        self.records: dict[int, dict[str, Any]] = {}  # flow key -> record
        self.by_sha: dict[str, int] = {}
        self.early: dict[str, dict[str, Any]] = {}  # arrivals before their start event
        self.background: dict[int, tuple[str, str]] = {}
        self.errors: list[str] = []
        self.cut_log: list[dict[str, Any]] = []
        self.arrived = 0
        self.next_bg = BACKGROUND_KEY

    def start_flow(self, f: Flow) -> None:
        key = self.sched.iteration * ITERATION_KEYS + f.id
        src, dst = self.spec.hosts[f.src], self.spec.hosts[f.dst]
        self.records[key] = {"iteration": self.sched.iteration, "id": f.id, "step": f.step, "src": f.src,
                             "dst": f.dst, "src_host": src, "dst_host": dst, "size": f.size, "asked": time.monotonic()}
        self.agents.send(src, key, dst, f.size, self.spec.seed)

    def start_background(self, pair: tuple[str, str]) -> None:
        self.next_bg += 1
        self.background[self.next_bg] = pair
        self.agents.send(pair[0], self.next_bg, pair[1], self.spec.background_bytes, self.spec.seed)

    def on_event(self, host: str, ev: dict[str, Any]) -> None:
        kind = ev.get("ev")
        if kind == "start":
            self.by_sha[ev["sha256"]] = ev["flow"]
            rec = self.records.get(ev["flow"])
            if rec is not None:
                rec["started"] = ev["t"]
            if ev["sha256"] in self.early:
                self.on_event(host, self.early.pop(ev["sha256"]))
        elif kind == "recv":
            self.on_arrival(ev)
        elif kind == "sent":
            self.on_sent(ev)
        elif kind in ("error", "exit"):
            self.errors.append(f"{host}: {ev.get('text')}")

    def on_arrival(self, ev: dict[str, Any]) -> None:
        key = self.by_sha.get(ev["sha256"])
        if key is None:
            self.early[ev["sha256"]] = ev
            return
        if key not in self.records:  # a background flow's (its sender may have ended first)
            return
        rec = self.records[key]
        rec.update(arrived=ev["t"], verified=ev["verified"], opened=ev["opened"], received_bytes=ev["bytes"],
                   reorder_s=ev.get("reorder_s"))
        if not ev["verified"]:
            self.errors.append(f"flow {rec['id']} of iteration {rec['iteration']} ({rec['src_host']} -> "
                               f"{rec['dst_host']}): its bytes' SHA-256 differs from the sender's")
            return
        self.arrived += 1
        if key // ITERATION_KEYS == self.sched.iteration:
            self.sched.arrived(rec["id"], ev["t"])
        if self.progress:
            self.progress(self.arrived, len(self.spec.schedule.flows) * self.spec.iterations, self.sched.iteration)

    def on_sent(self, ev: dict[str, Any]) -> None:
        key = ev["flow"]
        if key in self.background:
            pair = self.background.pop(key)
            if not self.sched.done and ev["ok"]:
                self.start_background(pair)
            return
        rec = self.records.get(key)
        if rec is None:
            return
        rec.update(sent=ev["t"], sent_ok=ev["ok"], retransmissions=ev["retransmissions"],
                   evs_retired=ev["evs_retired"], evs_carried=ev.get("evs_carried", []),
                   evs_recovered=ev.get("evs_recovered", []), per_plane_packets=ev["per_plane_packets"],
                   error=ev.get("error"), **{k: ev[k] for k in (*QP_FIELDS, *MRC_FIELDS) if k in ev})
        if not ev["ok"]:
            self.errors.append(f"flow {rec['id']} of iteration {rec['iteration']} ({rec['src_host']} -> "
                               f"{rec['dst_host']}): {ev.get('error') or 'not verified'}")

    def set_cable(self, down: bool, t0: float) -> None:
        """Cut or restore the cable in a thread of its own (the loop goes on)."""
        cut = self.spec.cut
        assert cut is not None

        def go() -> None:
            t = time.monotonic()
            rep = asyncio.run(set_link(self.fn.topo, self.fn.inventory, cut.link, down=down))
            self.cut_log.append({"down": down, "t": t - t0, "command_s": time.monotonic() - t,
                                 "cable": str(getattr(rep, "cable", ""))})

        threading.Thread(target=go, daemon=True).start()

    def loop(self) -> float:
        """Run the job; the job's start (monotonic)."""
        t0 = time.monotonic()
        self.sched.begin(t0)
        for pair in self.spec.background:
            self.start_background(pair)
        cut = self.spec.cut
        timers = [] if cut is None else [(t0 + cut.at, True)] + (
            [] if cut.down_for is None else [(t0 + cut.at + cut.down_for, False)])
        last = t0
        while not self.sched.done and not self.errors:
            now = time.monotonic()
            for f in self.sched.due(now):
                self.start_flow(f)
            while timers and timers[0][0] <= now:
                self.set_cable(timers.pop(0)[1], t0)
            nxt = [t for t in (self.sched.next_start(), timers[0][0] if timers else None) if t is not None]
            wait = min([0.05, *(t - now for t in nxt)])
            try:
                host, ev = self.agents.events.get(timeout=max(wait, 0.0005))
            except queue.Empty:
                if now - last > self.spec.timeout:
                    self.errors.append(f"no flow arrived for {self.spec.timeout:g} s; the job is given up")
                continue
            before = self.arrived
            self.on_event(host, ev)
            last = now if self.arrived > before else last
        self.drain()
        return t0

    def drain(self, wait: float = 2.0) -> None:
        """After the last arrival: the senders' own ends (their figures), for up to ``wait`` seconds."""
        deadline = time.monotonic() + wait
        while any("sent" not in r for r in self.records.values()) and not self.errors:
            try:
                host, ev = self.agents.events.get(timeout=max(deadline - time.monotonic(), 0.0005))
            except queue.Empty:
                return
            if ev.get("ev") != "exit":
                self.on_event(host, ev)


def crossing(topo: Any, link: str, src: str, dst: str) -> set[int]:
    """The EVs of ``src``'s NIC towards ``dst`` whose path uses cable ``link``."""
    return {p.ev for p in paths(topo, topo.host(src), topo.host(dst)) if link in p.links}


def healthy_retirements(topo: Any, spec: JobSpec, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each EV a flow's sender retired (not carried in) whose path avoids the cut cable
    (every path, without a cut): the flow, the EV, when it was first retired and when a
    late packet took that back (seconds after the sender's start; None: not known, or
    not taken back)."""
    out = []
    for r in records:
        cross = crossing(topo, spec.cut.link, r["src_host"], r["dst_host"]) if spec.cut else set()
        for ev in sorted(set(r.get("evs_retired", [])) - cross):
            evs = [e for e in r.get("ev_events", []) if e[1] == ev]
            retired = next((e[0] for e in evs if e[2] == "retired"), None)
            back = next((e[0] for e in evs if e[2] == "restored" and e[3] == "late" and retired is not None
                         and e[0] >= retired), None)
            out.append({"iteration": r["iteration"], "src": r["src_host"], "dst": r["dst_host"], "ev": ev,
                        "retired_s": retired, "taken_back_s": back})
    return out


def run_job(fn: Any, spec: JobSpec, workdir: Path, progress: Progress | None = None) -> dict[str, Any]:
    """Run ``spec`` on the running fabric ``fn``; the raw record (``figures.report``)."""
    t = fn.topo
    shape = {"planes": t.planes, "spines": t.spines, "leaves": len(t.leaves), "hosts_per_leaf": t.max_hosts_per_leaf,
             "evs_per_nic": t.evs_per_nic, "ev_mode": t.ev_mode}
    hosts = sorted({*spec.hosts, *(h for pair in spec.background for h in pair)})
    agents = Agents(fn, hosts, AgentSettings(spec.transport, spec.timeout, spec.rto_min, spec.nack_delay,
                                                  spec.ack_delay, shape),
                    workdir)
    run = _Run(fn, spec, agents, progress)
    try:
        agents.start()
        before = fabric_links.read(fn)
        t0 = run.loop()
        end = run.sched.ended_at[-1] if run.sched.ended_at else time.monotonic()
        if spec.cut is not None and (spec.cut.down_for is None or not any(not c["down"] for c in run.cut_log)):
            asyncio.run(set_link(fn.topo, fn.inventory, spec.cut.link, down=False))
        after = fabric_links.read(fn)
    finally:
        agents.stop()
    records = sorted(run.records.values(), key=lambda r: (r["iteration"], r["id"]))
    healthy = healthy_retirements(fn.topo, spec, records)
    return {"job": spec.schedule.name, "transport": spec.transport.name, "hosts": list(spec.hosts),
            "iterations": spec.iterations, "steps": spec.schedule.steps, "started_at": t0, "ended_at": end,
            "iteration_starts": run.sched.started_at[:len(run.sched.ended_at)], "iteration_ends": run.sched.ended_at,
            "flows": records, "errors": run.errors, "cut": None if spec.cut is None else {
                "link": spec.cut.link, "at_s": spec.cut.at, "down_for_s": spec.cut.down_for, "log": run.cut_log},
            "healthy_evs_retired": len(healthy), "healthy_retirements": healthy,
            "link_packets": fabric_links.packets(fn, before, after), "links": fabric_links.fabric_links(fn.topo),
            "background": [list(p) for p in spec.background]}
