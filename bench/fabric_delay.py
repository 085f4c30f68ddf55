"""The fabric's one-way delay under load, per hop, with the switch processes' scheduling.

Starts the default fabric (4 planes x (2 leaves + 2 spines), 2 hosts per leaf: 16
fabric switches and 4 NICs) under a private prefix and run directory, on the embedded
target placed as ``make run`` places it, then on BMv2 when it is on the PATH, and
for each:

1. measures the sprayed capacity h1 -> h3 (leaf 0 to leaf 1, through a spine): the
   delivered rate of 5,000 MRC WRITEs of 1,024 bytes sent flat out over every EV;
2. sends timestamped WRITEs (bench/_delay_flow.py) at 10%, 50% and 80% of that rate,
   ``FABRIC_DELAY_SECONDS`` (default 4) seconds each, sprayed over every EV and on one
   path (one EV: one plane, one spine), and prints the one-way delay's p50, p99,
   p99.9 and maximum. The hosts and switches share one kernel and its clock, so the
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
   timeslice) and the batch size as the processes see it: frames their switches
   received (the interfaces' rx counters) per timeslice run.

Needs root and Mininet. Prints only; never asserts. The pure parts (percentiles,
/proc parsing, residences) are tested in tests/env/test_bench_fabric_delay.py.
"""

from __future__ import annotations

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
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench._delay_flow import SIZE, TRACE_MARK  # noqa: E402

LOADS = (0.1, 0.5, 0.8)
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


@dataclass(frozen=True)
class SchedStat:
    """One task's /proc schedstat: time on a CPU and waiting on a run queue (ns), and
    how many timeslices it ran."""

    cpu_ns: int
    wait_ns: int
    slices: int

    def __add__(self, other: SchedStat) -> SchedStat:
        return SchedStat(self.cpu_ns + other.cpu_ns, self.wait_ns + other.wait_ns, self.slices + other.slices)

    def __sub__(self, other: SchedStat) -> SchedStat:
        return SchedStat(self.cpu_ns - other.cpu_ns, self.wait_ns - other.wait_ns, self.slices - other.slices)


ZERO = SchedStat(0, 0, 0)


def parse_schedstat(text: str) -> SchedStat:
    """``/proc/<pid>[/task/<tid>]/schedstat``: three numbers, time on a CPU (ns),
    time waiting on a run queue (ns), timeslices run."""
    cpu, wait, slices = (int(x) for x in text.split()[:3])
    return SchedStat(cpu, wait, slices)


def parse_stat_cpu_ticks(text: str) -> int:
    """utime + stime (clock ticks) of ``/proc/<pid>/stat``: fields 14 and 15, counted
    after the command name in parentheses, which may itself hold spaces and ')'."""
    rest = text[text.rindex(")") + 2:].split()  # rest[0] is field 3 (state)
    return int(rest[11]) + int(rest[12])


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


def sched_of(pids: Iterable[int]) -> SchedStat:
    total = ZERO
    for pid in pids:
        try:
            tasks = list(Path(f"/proc/{pid}/task").iterdir())
        except OSError:
            continue
        for task in tasks:
            try:
                total = total + parse_schedstat((task / "schedstat").read_text())
            except (OSError, ValueError):
                pass
    return total


def cpu_ticks_of(pids: Iterable[int]) -> int:
    total = 0
    for pid in pids:
        try:
            total += parse_stat_cpu_ticks(Path(f"/proc/{pid}/stat").read_text())
        except (OSError, ValueError, IndexError):
            pass
    return total


def rx_frames(interfaces: Iterable[str]) -> int:
    total = 0
    for name in interfaces:
        try:
            total += int(Path(f"/sys/class/net/{name}/statistics/rx_packets").read_text())
        except (OSError, ValueError):
            pass
    return total


@dataclass(frozen=True)
class Role:
    """The processes of one kind of switch and their switches' interfaces."""

    name: str
    pids: tuple[int, ...]
    interfaces: tuple[str, ...]

    def sample(self) -> tuple[SchedStat, int, int]:
        return sched_of(self.pids), cpu_ticks_of(self.pids), rx_frames(self.interfaces)


def sched_line(role: Role, before: tuple[SchedStat, int, int], after: tuple[SchedStat, int, int], secs: float) -> str:
    sched, ticks, frames = after[0] - before[0], after[1] - before[1], after[2] - before[2]
    cpu = ticks / os.sysconf("SC_CLK_TCK") / secs * 100
    per_slice = sched.wait_ns / sched.slices / 1e3 if sched.slices else math.nan
    batch = frames / sched.slices if sched.slices else math.nan
    return (f"{role.name} ({len(role.pids)} processes): CPU {cpu:.0f}% of a core, run-queue delay "
            f"{sched.wait_ns / 1e6 / secs:.0f} ms/s over their threads ({per_slice:.0f} us per timeslice), "
            f"{sched.slices / secs:,.0f} timeslices/s, {batch:.1f} frames per timeslice")


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
             roles: list[Role]) -> dict[str, object]:
    packets = max(1, int(pps * SECONDS))
    py = sys.executable
    recv = fn.host(dst).popen([py, "-m", "bench._delay_flow", "recv", "--packets", str(packets), "--seconds",
                               str(SECONDS + 20)], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
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
        got = json.loads(recv.communicate(timeout=SECONDS + 30)[0].decode().strip().splitlines()[-1])
    finally:
        if recv.poll() is None:
            recv.kill()
            recv.wait()
    time.sleep(0.2)  # the last traced packets' sightings
    sent = json.loads(out.decode().strip().splitlines()[-1])
    rows = got["psn_delay_ns_trimmed"]
    received = {psn: d for psn, d, _ in rows}
    return {"sent": sent["sent"], "late": sent["late"], "received": len(rows),
            "trimmed": sum(t for _, _, t in rows), "delays": [d for _, d, _ in rows],
            "hops": hop_lines(capture.take(), received),
            "sched": [sched_line(r, b, a, secs) for r, b, a in zip(roles, before, after, strict=True)]}


def roles_of(fn) -> list[Role]:
    out: dict[str, tuple[set[int], list[str]]] = {}
    for sw in fn.p4_switches():
        pids, intfs = out.setdefault("NICs" if sw.program == "nic" else "fabric switches", (set(), []))
        pids.add(sw.proc.pid)
        intfs += [i.name for i in sw.intfList() if i.name != "lo"]
    return [Role(name, tuple(sorted(p)), tuple(i)) for name, (p, i) in sorted(out.items())]


def measure(target: str) -> None:
    from fabric import plan as P
    from fabric.topology import default_topology
    from topologies.fabric_net import fabric_network, install_tables
    from topologies.mrc_flow import run_stream
    from topologies.switch_group import parse_placement

    topo = default_topology()
    prefix = "mrc" + secrets.token_hex(2)[:3]
    tag = f"fabric_delay [{target}]"
    src, dst = "h1", "h3"
    with tempfile.TemporaryDirectory(prefix="mrc-bench-") as tmp:
        with fabric_network(topo, prefix=prefix, target=target, grpc_base=0, run_dir=Path(tmp),
                            switches_per_process=parse_placement("cpu")) as fn:
            rep = install_tables(fn)
            if rep.failed:
                print(f"{tag}: install failed: {rep.summary()}")
                return
            fn.ping(src, dst, count=3)  # neighbour discovery, warm caches
            evs = P.nic_evs(topo, topo.host(src), topo.host(dst))
            got = run_stream(fn, src, dst, [e.ev for e in evs], CAPACITY_PACKETS, 0, size=SIZE, timeout=30.0)
            capacity = got["received"] / (got["first_to_last_seconds"] or 1e-9)
            roles = roles_of(fn)
            print(f"{tag}: {len(fn.p4_switches())} P4 switches in "
                  f"{sum(len(r.pids) for r in roles)} processes; sprayed capacity {src} -> {dst}: "
                  f"{capacity:,.0f} packets/s ({got['received']}/{CAPACITY_PACKETS} WRITEs of {SIZE} B flat out)")
            switch_of = {i: sw.mrc_name for sw in fn.p4_switches() for i in sw.intfNames() if i != "lo"}
            capture = Capture(switch_of)
            try:
                paths = {"sprayed": [e.ev for e in evs], "one path": [evs[0].ev]}
                for load in LOADS:
                    for label, chosen in paths.items():
                        r = run_load(fn, src, dst, chosen, capacity * load, capture, roles)
                        print(f"{tag}: {load:.0%} ({capacity * load:,.0f} packets/s) {label}: "
                              f"{r['received']}/{r['sent']} delivered ({r['trimmed']} trimmed, "
                              f"{r['late']} sent late); one-way delay p50/p99/p99.9/max "
                              f"{delay_line(r['delays'])} us")
                        for line in r["hops"]:
                            print(f"{tag}:     {line}")
                        for line in r["sched"]:
                            print(f"{tag}:     {line}")
            finally:
                capture.close()


def main() -> int:
    if os.geteuid() != 0:
        print("fabric_delay: needs root (Mininet); skipped")
        return 0
    from topologies.p4switch import BMV2_TOOLS, bmv2_available

    targets = ["embedded"]
    if bmv2_available():
        targets.append("bmv2")
    else:
        print(f"fabric_delay: bmv2: skipped ({', '.join(BMV2_TOOLS)} not on the PATH)")
    for target in targets:
        measure(target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
