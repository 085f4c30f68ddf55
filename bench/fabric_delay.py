"""The fabric's one-way delay under load, per hop, with the switch processes' scheduling.

Starts the default fabric (4 planes x (2 leaves + 2 spines), 2 hosts per leaf: 16
fabric switches and 4 NICs) under a private prefix and run directory, on the embedded
target placed as ``make run`` places it, then on BMv2 when it is on the PATH, and
for each:

1. measures the sprayed capacity h1 -> h3 (leaf 0 to leaf 1, through a spine): the
   delivered rate of 5,000 MRC WRITEs of 1,024 bytes sent flat out over every EV;
2. sends timestamped WRITEs (bench/_delay_flow.py) at 10%, 50% and 90% of that rate
   (``--loads``), ``FABRIC_DELAY_SECONDS`` (default 4, ``--seconds``) seconds each,
   sprayed over every EV and on one path (one EV: one plane, one spine; ``--paths``),
   and prints the one-way delay's p50, p99, p99.9 and maximum, and the rate the
   sender achieved (a sender short of CPU falls behind its schedule). The hosts and switches share one kernel and its clock, so the
   delay is exact: the send time is in the packet, the receive time is the kernel's;
3. per hop, from packets traced on the way (about 50 a second, marked in the RETH): a
   packet socket in the root namespace, filtered on the mark, takes the kernel's time
   at which the packet arrives at each switch port it crosses; a switch's residence is
   the time from its ingress port to the next switch's (the last NIC's: to the
   receiving socket), the sender's stack from the send time to the first NIC's port.
   fabric.p4 exports no timestamps of its own, so this is what both targets give alike;
4. per process role (fabric switches, NICs) during each run, from /proc: time on a CPU
   (``/proc/<pid>/stat`` utime + stime, as % of one core), run-queue delay
   (``/proc/<pid>/task/*/schedstat``: time runnable but waiting for a CPU, per
   timeslice), preemptions (``nonvoluntary_ctxt_switches``) and the batch size as the
   processes see it: frames their switches received (the interfaces' rx counters)
   per timeslice run; and from each ``p4target group`` process's own report
   (SIGUSR2, p4target/ports/loop_stats.py): its loop passes and how many slept, the
   frames per receive-ring batch, transmit flushes that waited for room, frames
   dropped on full rings, and its garbage collections.

A/B comparisons (``--variants A,B,... --rounds N``): every round runs every variant
in turn, so a noisy machine weighs on both alike; at the end each load's delays are
pooled per variant, with the ratio to the first. A variant (``Variant``) is applied
live to every thread of the running switch processes (``nice=N``, ``rr=N``: SCHED_RR,
``slice=US``: EEVDF's slice, ``unpinned``; ``base``: SCHED_OTHER, nice 0, the CPUs
they started on) or needs a network of its own (``gc=MODE``: the group file's
collector mode, ``spp=N|cpu|plane``: switches per process), started when the next
variant asks for another. The loads are of the capacity measured first (or
``--capacity``). For example::

    flock /tmp/mrc-net.lock .venv/bin/python bench/fabric_delay.py --targets embedded \
        --paths sprayed --variants base,rr=10 --rounds 2

Needs root and Mininet. Prints only; never asserts. The pure parts (percentiles,
residences, variants, report differences, and the /proc parsing of
bench/_proc_stats.py) are tested in tests/env/test_bench_fabric_delay.py.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import math
import os
import secrets
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench._delay_flow import SIZE, TRACE_MARK  # noqa: E402
from bench._proc_stats import SchedStat, cpu_ticks_of, involuntary_of, sched_of, threads_of  # noqa: E402

LOADS = (0.1, 0.5, 0.9)
SECONDS = float(os.environ.get("FABRIC_DELAY_SECONDS", "4"))
CAPACITY_PACKETS = 5000
TRACED_PER_SECOND = 50
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
SO_ATTACH_FILTER = 26
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
# Where the RETH's rkey (the trace mark), vaddr (send time) and the BTH's PSN sit in a
# frame from the host (Ethernet, IPv6, UDP, BTH, RETH) and in the fabric (an outer IPv6
# header more; the default fabric's paths need no SRH)
HOST_OFFSETS = {"rkey": 82, "vaddr": 74, "psn": 70}
FABRIC_OFFSETS = {k: v + 40 for k, v in HOST_OFFSETS.items()}


# ---- pure parts ------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q``-th percentile (0 < q <= 100): the smallest value with at
    least q% of the values at or below it. NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(round(q * len(ordered) / 100, 9)))  # 99.9% of 1000 is 999, not 999.0000000000001
    return ordered[rank - 1]


def residences(sent_ns: int, sightings: Iterable[tuple[int, str]], received_ns: int) -> list[tuple[str, int]]:
    """Where a traced packet spent its time: ``("host", ns)`` from the send time to the
    first switch port, then per switch its name and the time from its ingress port to
    the next switch's ingress port (the last one's: to the receiving socket).
    ``sightings``: (kernel time at a switch's ingress port, switch), any order."""
    seen = sorted(sightings)
    if not seen:
        return []
    out = [("host", seen[0][0] - sent_ns)]
    for (t, sw), (t_next, _) in zip(seen, seen[1:] + [(received_ns, "")], strict=True):
        out.append((sw, t_next - t))
    return out


# ---- the capture of traced packets --------------------------------------------------


def _trace_filter() -> tuple[bytes, ctypes.Array[ctypes.c_char]]:
    """A classic BPF program: accept a frame whose RETH rkey (host or fabric offset)
    is the trace mark, drop everything else. Returns SO_ATTACH_FILTER's sock_fprog
    and the instructions it points to (kept alive by the caller)."""
    ld_w_abs, jeq_k, ret_k = 0x20, 0x15, 0x06
    prog = [(ld_w_abs, 0, 0, HOST_OFFSETS["rkey"]), (jeq_k, 3, 0, TRACE_MARK),
            (ld_w_abs, 0, 0, FABRIC_OFFSETS["rkey"]), (jeq_k, 1, 0, TRACE_MARK),
            (ret_k, 0, 0, 0), (ret_k, 0, 0, 0x40000)]
    insns = ctypes.create_string_buffer(b"".join(struct.pack("HBBI", *i) for i in prog))
    return struct.pack("HL", len(prog), ctypes.addressof(insns)), insns


class Capture:
    """Kernel receive times of traced packets at every switch port of the root namespace."""

    def __init__(self, switch_of: dict[str, str]) -> None:
        self.switch_of = switch_of
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        fprog, self._insns = _trace_filter()
        self.sock.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, fprog)
        self.sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        self.sock.settimeout(0.2)
        self.lock = threading.Lock()
        self.seen: dict[int, tuple[int, list[tuple[int, str]]]] = {}  # PSN -> (send time, sightings)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                data, anc, _, addr = self.sock.recvmsg(256, 64)
            except (socket.timeout, TimeoutError):
                continue
            except OSError:
                return
            switch = self.switch_of.get(addr[0])
            if switch is None or addr[2] == PACKET_OUTGOING:
                continue
            t = next((int.from_bytes(d[:8], sys.byteorder) * 1_000_000_000 + int.from_bytes(d[8:16], sys.byteorder)
                      for level, kind, d in anc if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS), None)
            if t is None:
                continue
            off = HOST_OFFSETS if data[82:86] == TRACE_MARK.to_bytes(4, "big") else FABRIC_OFFSETS
            psn = int.from_bytes(data[off["psn"]:off["psn"] + 4], "big") & 0xFFFFFF
            sent = int.from_bytes(data[off["vaddr"]:off["vaddr"] + 8], "big")
            with self.lock:
                self.seen.setdefault(psn, (sent, []))[1].append((t, switch))

    def take(self) -> dict[int, tuple[int, list[tuple[int, str]]]]:
        with self.lock:
            seen, self.seen = self.seen, {}
        return seen

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=2)
        self.sock.close()


# ---- /proc and /sys -----------------------------------------------------------------


def rx_frames(interfaces: Iterable[str]) -> int:
    total = 0
    for name in interfaces:
        try:
            total += int(Path(f"/sys/class/net/{name}/statistics/rx_packets").read_text())
        except (OSError, ValueError):
            pass
    return total


@dataclass(frozen=True)
class Sample:
    sched: SchedStat
    ticks: int
    frames: int
    preempted: int


@dataclass(frozen=True)
class Role:
    """The processes of one kind of switch and their switches' interfaces; ``logs``:
    the log of each ``p4target group`` process among them (they answer SIGUSR2)."""

    name: str
    pids: tuple[int, ...]
    interfaces: tuple[str, ...]
    logs: tuple[tuple[int, Path], ...] = ()

    def sample(self) -> Sample:
        return Sample(sched_of(self.pids), cpu_ticks_of(self.pids), rx_frames(self.interfaces),
                      involuntary_of(self.pids))


def sched_line(role: Role, before: Sample, after: Sample, secs: float) -> str:
    sched, ticks, frames = after.sched - before.sched, after.ticks - before.ticks, after.frames - before.frames
    cpu = ticks / os.sysconf("SC_CLK_TCK") / secs * 100
    per_slice = sched.wait_ns / sched.slices / 1e3 if sched.slices else math.nan
    batch = frames / sched.slices if sched.slices else math.nan
    return (f"{role.name} ({len(role.pids)} processes): CPU {cpu:.0f}% of a core, run-queue delay "
            f"{sched.wait_ns / 1e6 / secs:.0f} ms/s over their threads ({per_slice:.0f} us per timeslice), "
            f"{sched.slices / secs:,.0f} timeslices/s, {(after.preempted - before.preempted) / secs:,.0f} "
            f"preemptions/s, {batch:.1f} frames per timeslice")


# ---- process settings applied to running switch processes (the variants) ---------------


NETWORK_KEYS = ("gc", "spp")  # settings a network is started with (the others are applied live)


@dataclass(frozen=True)
class Variant:
    """Settings of the switch processes for one side of an A/B comparison.

    Applied live to every thread of the running processes: ``nice`` (the nice value),
    ``rr`` (SCHED_RR at that priority; 0: SCHED_OTHER), ``slice`` (EEVDF's time slice
    of a SCHED_OTHER thread, us: a shorter one runs sooner after a wake-up, with the
    same share of the CPU; 0: the kernel's), ``unpinned`` (every CPU
    allowed; else the CPUs the process was started on). A network of its own:
    ``gc`` (the group file's collector mode), ``spp`` (``--switches-per-process``)."""

    name: str = "base"
    nice: int = 0
    rr: int = 0
    slice_us: int = 0
    unpinned: bool = False
    gc: str | None = None
    spp: str = "cpu"

    @property
    def network(self) -> tuple[str | None, str]:
        return self.gc, self.spp


def parse_variant(text: str) -> Variant:
    """``base`` or settings joined by ``+``: ``nice=-10``, ``rr=10``, ``slice=200``, ``unpinned``,
    ``gc=default|freeze|off``, ``spp=cpu|plane|N``. ValueError naming the bad part."""
    fields: dict[str, object] = {"name": text}
    for part in text.split("+"):
        key, _, value = part.partition("=")
        if key == "base" and not value:
            continue
        if key == "unpinned" and not value:
            fields["unpinned"] = True
        elif key in ("nice", "rr") and value.lstrip("-").isdigit():
            fields[key] = int(value)
        elif key == "slice" and value.isdigit():
            fields["slice_us"] = int(value)
        elif key == "gc" and value in ("default", "freeze", "off"):
            fields["gc"] = value
        elif key == "spp" and value:
            fields["spp"] = value
        else:
            raise ValueError(f"variant {text!r}: {part!r} is not base, nice=N, rr=N, slice=US, unpinned, "
                             "gc=default|freeze|off or spp=cpu|plane|N")
    return Variant(**fields)  # type: ignore[arg-type]


def apply_variant(launched: dict[int, set[int]], variant: Variant) -> None:
    """Give every thread of each process (pid -> the CPUs it was started on) the
    variant's CPUs, scheduling policy and nice value."""
    from p4target.ports.scheduling import set_fair

    every = set(range(os.cpu_count() or 1))
    for pid, cpus in launched.items():
        for tid in threads_of(pid):
            try:
                os.sched_setaffinity(tid, every if variant.unpinned else cpus)
                if variant.rr:
                    os.sched_setscheduler(tid, os.SCHED_RR, os.sched_param(variant.rr))
                    os.setpriority(os.PRIO_PROCESS, tid, variant.nice)
                else:
                    set_fair(tid, variant.nice, variant.slice_us)
            except ProcessLookupError:
                pass  # a thread that ended meanwhile


def applied(pid: int) -> str:
    """What a process's main thread runs with: CPUs, policy, nice value, time slice."""
    from p4target.ports.scheduling import thread_slice_ns

    try:
        policy = {os.SCHED_OTHER: "other", os.SCHED_RR: "rr", os.SCHED_FIFO: "fifo"}.get(os.sched_getscheduler(pid), "?")
        return (f"pid {pid} CPUs {sorted(os.sched_getaffinity(pid))} {policy} nice "
                f"{os.getpriority(os.PRIO_PROCESS, pid)} slice {thread_slice_ns(pid)} ns")
    except OSError as e:
        return f"pid {pid}: {e}"


# ---- the group processes' own counters (SIGUSR2: p4target/ports/loop_stats.py) ----------


def report_diff(before: dict[str, Any], after: dict[str, Any]) -> str:
    """What a group process did between two reports: loop passes and how many slept,
    frames and batches read from its receive rings, transmit flushes that waited, and
    its garbage collections."""
    def total(r: dict[str, Any], key: str) -> float:
        return float(sum(sw[key] for sw in r["switches"].values()))

    frames = total(after, "rx") - total(before, "rx")
    batches = total(after, "batches") - total(before, "batches")
    passes = after["passes"] - before["passes"]
    slept = after["sleeps"] - before["sleeps"]
    gcs = [a - b for a, b in zip(after["gc"]["collections"], before["gc"]["collections"], strict=True)]
    spent = [round(a - b, 1) for a, b in zip(after["gc"]["total_ms"], before["gc"]["total_ms"], strict=True)]
    return (f"pid {after['pid']}: {passes:,} passes ({slept:,} slept), {frames:,.0f} frames in {batches:,.0f} ring "
            f"batches (mean {frames / batches if batches else math.nan:.1f}, largest so far "
            f"{max((sw['largest_batch'] for sw in after['switches'].values()), default=0)}), "
            f"{total(after, 'flush_waits') - total(before, 'flush_waits'):.0f} transmit flushes waited "
            f"({total(after, 'flush_wait_ms') - total(before, 'flush_wait_ms'):.1f} ms), "
            f"{total(after, 'rx_dropped') - total(before, 'rx_dropped'):.0f} dropped on full rings; gc "
            f"{'on' if after['gc']['enabled'] else 'off'}: collections by generation {gcs} ({spent} ms), "
            f"longest so far {after['gc']['longest_ms']} ms")


def reports_of(roles: list[Role]) -> dict[int, dict[str, Any] | None]:
    from p4target.ports.loop_stats import ask_report

    return {pid: ask_report(pid, log) for r in roles for pid, log in r.logs}


# ---- one target -----------------------------------------------------------------------


def us(ns: float) -> str:
    return "n/a" if math.isnan(ns) else f"{ns / 1e3:,.0f}"


def delay_line(delays: list[int]) -> str:
    return " / ".join(us(percentile(delays, q)) for q in (50, 99, 99.9)) + f" / {us(max(delays, default=math.nan))}"


def hop_lines(traced: dict[int, tuple[int, list[tuple[int, str]]]], received: dict[int, int]) -> list[str]:
    """p50 / p99 / max per position on the path (host stack, then the switches)."""
    by_pos: dict[int, tuple[str, list[int]]] = {}
    for psn, (sent, seen) in traced.items():
        if psn not in received:
            continue
        for k, (sw, ns) in enumerate(residences(sent, seen, sent + received[psn])):
            kind = "sender host" if sw == "host" else ("NIC" if sw.startswith("nic") else sw.split("-")[1].rstrip("0123456789"))
            by_pos.setdefault(k, (kind, []))[1].append(ns)
    return [f"hop {k} {kind}: {us(percentile(v, 50))} / {us(percentile(v, 99))} / {us(max(v))} us "
            f"(p50 / p99 / max of {len(v)} traced packets)" for k, (kind, v) in sorted(by_pos.items())]


def run_load(fn, src: str, dst: str, evs: list[int], pps: float, capture: Capture,
             roles: list[Role], seconds: float) -> dict[str, Any]:
    packets = max(1, int(pps * seconds))
    py = sys.executable
    recv = fn.host(dst).popen([py, "-m", "bench._delay_flow", "recv", "--packets", str(packets), "--seconds",
                               str(seconds + 20)], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        reports = reports_of(roles)
        time.sleep(0.5)  # the receiver binds its socket
        capture.take()
        before = [r.sample() for r in roles]
        t0 = time.monotonic()
        every = max(1, round(pps / TRACED_PER_SECOND))
        out = fn.host(src).popen([py, "-m", "bench._delay_flow", "send", fn.address(dst), "--src", fn.address(src),
                                  "--evs", ",".join(map(str, evs)), "--pps", f"{pps:.1f}", "--packets", str(packets),
                                  "--trace-every", str(every)],
                                 cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE).communicate(timeout=120)[0]
        secs = time.monotonic() - t0
        after = [r.sample() for r in roles]
        got = json.loads(recv.communicate(timeout=seconds + 30)[0].decode().strip().splitlines()[-1])
    finally:
        if recv.poll() is None:
            recv.kill()
            recv.wait()
    time.sleep(0.2)  # the last traced packets' sightings
    reports_after = reports_of(roles)
    sent = json.loads(out.decode().strip().splitlines()[-1])
    rows = got["psn_delay_ns_trimmed"]
    received = {psn: d for psn, d, _ in rows}
    return {"sent": sent["sent"], "late": sent["late"], "received": len(rows), "send_seconds": sent["seconds"],
            "trimmed": sum(t for _, _, t in rows), "delays": [d for _, d, _ in rows],
            "hops": hop_lines(capture.take(), received),
            "sched": [sched_line(r, b, a, secs) for r, b, a in zip(roles, before, after, strict=True)]
            + [report_diff(b, a) for pid, b in reports.items() if b is not None
               and (a := reports_after.get(pid)) is not None]}


def roles_of(fn) -> list[Role]:
    out: dict[str, tuple[set[int], list[str], dict[int, Path]]] = {}
    for sw in fn.p4_switches():
        pids, intfs, logs = out.setdefault("NICs" if sw.program == "nic" else "fabric switches", (set(), [], {}))
        pids.add(sw.proc.pid)
        intfs += [i.name for i in sw.intfList() if i.name != "lo"]
        if getattr(sw, "group", None) is not None:  # a p4target group process: it answers SIGUSR2
            logs[sw.proc.pid] = sw.log_path
    return [Role(name, tuple(sorted(p)), tuple(i), tuple(sorted(lg.items()))) for name, (p, i, lg) in sorted(out.items())]


@dataclass(frozen=True)
class Options:
    loads: tuple[float, ...] = LOADS
    paths: tuple[str, ...] = ("sprayed", "one path")
    seconds: float = SECONDS
    variants: tuple[Variant, ...] = (Variant(),)
    rounds: int = 1
    capacity: float | None = None


@dataclass
class Results:
    """Every load's delays, by (variant, load, path), pooled over the rounds."""

    delays: dict[tuple[str, float, str], list[int]] = field(default_factory=dict)

    def add(self, variant: str, load: float, path: str, delays: list[int]) -> None:
        self.delays.setdefault((variant, load, path), []).extend(delays)

    def summary(self, tag: str, opts: Options) -> list[str]:
        lines = []
        first = opts.variants[0].name
        for load in opts.loads:
            for path in opts.paths:
                base = self.delays.get((first, load, path), [])
                for v in opts.variants:
                    d = self.delays.get((v.name, load, path), [])
                    ratio = "" if v.name == first or not d or not base else (
                        f"; p99.9 x{percentile(d, 99.9) / percentile(base, 99.9):.2f}, max x{max(d) / max(base):.2f} "
                        f"of {first}")
                    lines.append(f"{tag}: summary {load:.0%} {path} {v.name}: p50/p99/p99.9/max {delay_line(d)} us "
                                 f"over {len(d)} packets ({opts.rounds} rounds){ratio}")
        return lines


def start_network(stack: ExitStack, target: str, variant: Variant):
    """The default fabric with the variant's network settings, closed with ``stack``."""
    from fabric.topology import default_topology
    from topologies.fabric_net import fabric_network
    from topologies.switch_group import GroupedP4Switch, parse_placement

    GroupedP4Switch.gc_mode = variant.gc
    prefix = "mrc" + secrets.token_hex(2)[:3]
    tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="mrc-bench-"))
    return stack.enter_context(fabric_network(default_topology(), prefix=prefix, target=target, grpc_base=0,
                                              run_dir=Path(tmp), switches_per_process=parse_placement(variant.spp)))


def sprayed_evs(src: str, dst: str) -> list[int]:
    """The EVs of the default fabric from host ``src`` to host ``dst`` (the first: one plane, one spine)."""
    from fabric import plan as P
    from fabric.topology import default_topology

    topo = default_topology()
    return [e.ev for e in P.nic_evs(topo, topo.host(src), topo.host(dst))]


def measure_capacity(fn, tag: str, src: str, dst: str, evs: list[int]) -> float:
    from topologies.mrc_flow import run_stream

    got = run_stream(fn, src, dst, evs, CAPACITY_PACKETS, 0, size=SIZE, timeout=30.0)
    capacity = float(got["received"] / (got["first_to_last_seconds"] or 1e-9))
    print(f"{tag}: sprayed capacity {src} -> {dst}: {capacity:,.0f} packets/s ({got['received']}/{CAPACITY_PACKETS} "
          f"WRITEs of {SIZE} B flat out)")
    return capacity


def run_loads(fn, tag: str, variant: Variant, capacity: float, opts: Options,
              results: Results) -> None:
    src, dst = "h1", "h3"
    evs = sprayed_evs(src, dst)
    roles = roles_of(fn)
    launched = {pid: os.sched_getaffinity(pid) for r in roles for pid in r.pids}
    switch_of = {i: sw.mrc_name for sw in fn.p4_switches() for i in sw.intfNames() if i != "lo"}
    capture = Capture(switch_of)
    paths = {"sprayed": evs, "one path": evs[:1]}
    try:
        apply_variant(launched, variant)
        print(f"{tag} {variant.name}: applied: " + "; ".join(applied(pid) for pid in launched))
        for load in opts.loads:
            for label in opts.paths:
                r = run_load(fn, src, dst, paths[label], capacity * load, capture, roles, opts.seconds)
                results.add(variant.name, load, label, r["delays"])
                print(f"{tag} {variant.name}: {load:.0%} ({capacity * load:,.0f} packets/s) {label}: "
                      f"{r['received']}/{r['sent']} delivered ({r['trimmed']} trimmed, "
                      f"{r['late']} sent late, sent at {r['sent'] / max(r['send_seconds'], 1e-9):,.0f} packets/s "
                      f"over {r['send_seconds']:.2f} s); one-way delay p50/p99/p99.9/max {delay_line(r['delays'])} us")
                for line in r["hops"] + r["sched"]:
                    print(f"{tag}:     {line}")
    finally:
        apply_variant(launched, Variant())
        capture.close()


def measure(target: str, opts: Options) -> None:
    """Every round, every variant in turn (a network kept as long as the next variant
    needs the same one), every load and path; then the pooled summary."""
    from topologies.fabric_net import install_tables

    tag = f"fabric_delay [{target}]"
    results = Results()
    capacity = opts.capacity
    with ExitStack() as outer:
        stack: ExitStack | None = None
        current: tuple[str | None, str] | None = None
        fn = None
        for round_no in range(opts.rounds):
            for variant in opts.variants:
                if variant.network != current or stack is None:
                    if stack is not None:
                        stack.close()
                    stack = outer.enter_context(ExitStack())
                    fn = start_network(stack, target, variant)
                    current = variant.network
                    rep = install_tables(fn)
                    if rep.failed:
                        print(f"{tag}: install failed: {rep.summary()}")
                        return
                    fn.ping("h1", "h3", count=3)  # neighbour discovery, warm caches
                    print(f"{tag}: network {variant.network}: {len(fn.p4_switches())} P4 switches in "
                          f"{len({sw.proc.pid for sw in fn.p4_switches()})} processes")
                if capacity is None:
                    capacity = measure_capacity(fn, tag, "h1", "h3", sprayed_evs("h1", "h3"))
                print(f"{tag}: round {round_no + 1}/{opts.rounds}, variant {variant.name}")
                run_loads(fn, tag, variant, capacity, opts, results)
    for line in results.summary(tag, opts):
        print(line)


def parse_args(argv: list[str] | None) -> tuple[list[str] | None, Options]:
    ap = argparse.ArgumentParser(prog="bench/fabric_delay.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--targets", help="embedded,bmv2 (default: embedded, and bmv2 when on the PATH)")
    ap.add_argument("--loads", default=",".join(str(x) for x in LOADS), help="fractions of the sprayed capacity")
    ap.add_argument("--paths", default="sprayed,one", help="sprayed, one (one path) or both")
    ap.add_argument("--seconds", type=float, default=SECONDS, help="seconds per load")
    ap.add_argument("--variants", default="base", help="comma-separated variants, alternated (see Variant)")
    ap.add_argument("--rounds", type=int, default=1, help="how many times every variant runs, in turn")
    ap.add_argument("--capacity", type=float, help="packets/s taken as the sprayed capacity (else measured)")
    a = ap.parse_args(argv)
    try:
        variants = tuple(parse_variant(v) for v in a.variants.split(","))
        loads = tuple(float(x) for x in a.loads.split(","))
    except ValueError as e:
        ap.error(str(e))
    paths = tuple({"one": "one path", "sprayed": "sprayed"}[p] for p in a.paths.split(",") if p in ("one", "sprayed"))
    if not paths or a.rounds < 1 or not all(0 < x <= 2 for x in loads):
        ap.error("--paths sprayed,one; --rounds >= 1; --loads fractions in (0, 2]")
    targets = a.targets.split(",") if a.targets else None
    return targets, Options(loads, paths, a.seconds, variants, a.rounds, a.capacity)


def main(argv: list[str] | None = None) -> int:
    targets, opts = parse_args(argv)
    if os.geteuid() != 0:
        print("fabric_delay: needs root (Mininet); skipped")
        return 0
    from topologies.p4switch import BMV2_TOOLS, bmv2_available

    if targets is None:
        targets = ["embedded"]
        if bmv2_available():
            targets.append("bmv2")
        else:
            print(f"fabric_delay: bmv2: skipped ({', '.join(BMV2_TOOLS)} not on the PATH)")
    for target in targets:
        measure(target, opts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
