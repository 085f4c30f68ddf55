"""The `make run` demo on a started, programmed fabric: pings, one MRC flow, a cut link,
and the same cut under the RoCEv2 baseline.

Why these: together they show what the fabric is for, and what MRC changes. Every pair of hosts
reaches each other over IPv6 through the NICs and the P4 fabric (the ping matrix); one
MRC-lite transfer (the endpoints' mrc-send and mrc-recv) is spread over every plane (per-plane packet counts read from the NICs'
P4Runtime counters, not from the senders' intentions); and a spine link cut in the
middle of the flow changes no fabric table, only the NICs' choice of paths
(controller/cable_cuts.py), while the other planes keep carrying the flow. Then the same
bytes over one RoCEv2 RC queue pair whose one path crosses the same cable, cut and
restored at the same points: it stalls until the cable is back (go-back-N resends) or
fails after its retries.

Pure reporting (``format_*``) is separate from the steps that touch the network.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.counters import Counts, delta, read_all
from fabric import plan as P
from fabric.entries import nodes
from fabric.paths import links, paths
from topologies.fabric_net import FabricNetwork
from topologies.ping import PingResult

Say = Callable[[str], None]


def ping_matrix(fn: FabricNetwork, count: int = 2) -> dict[tuple[str, str], PingResult]:
    """``ping -6`` from every host to every other host."""
    hosts = [h.name for h in fn.topo.hosts]
    return {(a, b): fn.ping(a, b, count) for a, b in itertools.permutations(hosts, 2)}


def format_matrix(results: dict[tuple[str, str], PingResult]) -> list[str]:
    """Rows of replies/sent, one row per source host."""
    hosts = sorted({a for a, _ in results} | {b for _, b in results}, key=lambda h: int(h[1:]))
    width = max(len(h) for h in hosts) + 1
    lines = ["from\\to".ljust(width + 2) + "".join(h.rjust(7) for h in hosts)]
    for a in hosts:
        cells = []
        for b in hosts:
            r = results.get((a, b))
            cells.append("-".rjust(7) if r is None else f"{r.received}/{r.sent}".rjust(7))
        lines.append(a.ljust(width + 2) + "".join(cells))
    return lines


def spine_link(fn: FabricNetwork, src: str, dst: str) -> str | None:
    """The cable to cut: the source leaf's first uplink in the lowest plane that has one,
    when the two hosts are on different leaves (None: no spine on their paths)."""
    s, d = fn.topo.host(src), fn.topo.host(dst)
    if s.leaf == d.leaf:
        return None
    for link in links(fn.topo):
        if link.kind == "fabric" and link.leaf == s.leaf:
            return link.name
    return None


@dataclass
class FlowResult:
    """One MRC-lite transfer (mrc-send -> mrc-recv): its verdict and report, and the
    packets per plane before and after the cut as the NICs counted them."""

    src: str
    dst: str
    nbytes: int
    verified: bool  # every byte arrived and the receiver's SHA-256 matched the sender's
    report: dict[str, Any]  # mrc-send's JSON report (docs/endpoints.md)
    evs: int
    planes_before: dict[int, int]  # packets the source NIC sent into each plane (before the cut, or all)
    planes_after: dict[int, int]  # after the cut (empty without one)
    delivered_before: dict[int, int]  # packets the destination NIC received from each plane
    delivered_after: dict[int, int]
    cut: str | None = None
    cut_seconds: float | None = None  # the cable command's time
    fabric_unchanged: bool | None = None
    errors: list[str] = field(default_factory=list)
    crossing: list[int] = field(default_factory=list)  # EVs whose path uses the cut cable
    retired: list[int] = field(default_factory=list)  # EVs the sender retired
    recovered_after_restore: list[int] = field(default_factory=list)  # crossing EVs back after the restore
    recovered_while_down: list[int] = field(default_factory=list)

    @property
    def healthy_retired(self) -> list[int]:
        return sorted(set(self.retired) - set(self.crossing))


def _plane_counts(counts: Counts, counter: str) -> dict[int, int]:
    return {p: pk for p, (pk, _) in sorted(counts.get(counter, {}).items())}


async def _read(fn: FabricNetwork, names: list[str]) -> dict[str, Counts]:
    return await read_all([fn.inventory.switches[n] for n in names])


def read_nics(fn: FabricNetwork, names: list[str]) -> dict[str, Counts]:
    """Every counter of the switches ``names``, now."""
    return asyncio.run(_read(fn, names))


class NicProgress:
    """The packets a transfer's NICs have counted, polled over P4Runtime sessions kept
    open for the whole transfer: a cut timed "half-way" must land while the sender is
    still sending, and opening a session per poll (a connection to every NIC each
    time) took longer on a loaded machine with BMv2 than a short transfer lasts.

    ``src``'s ``NicEgress.plane_tx`` (what it sent into each plane) and, with ``dst``,
    that NIC's ``NicIngress.plane_rx``; ``read`` returns them as ``Counts`` per NIC."""

    def __init__(self, fn: FabricNetwork, src: str, dst: str | None = None) -> None:
        from controller.codec import codec
        from controller.p4rt import Session

        self._reads = [(src, "NicEgress.plane_tx")] + ([(dst, "NicIngress.plane_rx")] if dst else [])
        self._sessions = {n: Session(fn.inventory.switches[n], primary=False) for n, _ in self._reads}
        self._codecs = {n: codec(t.target.program, t.target.target) for n, t in self._sessions.items()}
        self.src = src

    async def __aenter__(self) -> NicProgress:
        opened = []
        try:
            for s in self._sessions.values():
                await s.open()
                opened.append(s)
        except BaseException:
            for s in opened:
                await s.close()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        for s in self._sessions.values():
            await s.close()

    async def read(self) -> dict[str, Counts]:
        async def one(nic: str, counter: str) -> tuple[str, str, dict[int, tuple[int, int]]]:
            return nic, counter, await self._sessions[nic].read_counter(self._codecs[nic], counter)

        out: dict[str, Counts] = {}
        for nic, counter, cells in await asyncio.gather(*(one(n, c) for n, c in self._reads)):
            out.setdefault(nic, {})[counter] = cells
        return out

    def sent(self, now: dict[str, Counts], before: dict[str, Counts]) -> int:
        """Packets ``src`` sent into the planes between ``before`` and ``now``."""
        return sum(_plane_counts(delta(now, before)[self.src], "NicEgress.plane_tx").values())

    async def until_sent(self, before: dict[str, Counts], packets: int, timeout: float,
                         stop: Callable[[], bool] = lambda: False) -> dict[str, Counts]:
        """Poll until ``src`` has sent ``packets`` since ``before`` (or ``timeout``
        seconds have passed, or ``stop()`` says the sender is gone); the last read."""
        end = time.monotonic() + timeout
        while True:
            now = await self.read()
            if self.sent(now, before) >= packets or time.monotonic() > end or stop():
                return now
            await asyncio.sleep(0.02)


@dataclass
class CutPoints:
    """When a cable went down and came back during a transfer, and how many packets the
    source NIC had sent by then."""

    mid: dict[str, Counts]  # both NICs' counters at the cut
    seconds: float  # the cable command's time
    cut_at: float  # unix time
    restored_at: float
    sent_at_cut: int
    sent_at_restore: int
    sender_gone: bool  # the sender had ended before the restore point


async def cut_and_restore(fn: FabricNetwork, nics: tuple[str, str], before: dict[str, Counts], packets: int,
                          link: str, timeout: float, say: Say, stop: Callable[[], bool] = lambda: False) -> CutPoints:
    """Cut ``link``'s cable once the source NIC has sent half of ``packets`` (counted
    from ``before``, resends included) and restore it at three quarters, or as soon as
    ``stop()`` says the sender has ended; no table is written either way."""
    from controller.cable_cuts import set_link

    async with NicProgress(fn, nics[0], nics[1]) as progress:
        mid_counts = await progress.until_sent(before, packets // 2, timeout, stop)
        cut_at = time.time()
        rep = await set_link(fn.topo, fn.inventory, link, down=True, nodes=fn.net.nameToNode)
        sent_at_cut = progress.sent(mid_counts, before)
        say(f"  cut {rep.link} after {sent_at_cut} packets: {rep.cable}; "
            "no table written (the endpoints find the dead paths)")
        now = await progress.until_sent(before, packets * 3 // 4, timeout, stop)
        gone = stop()
        restored_at = time.time()
        back = await set_link(fn.topo, fn.inventory, link, down=False, nodes=fn.net.nameToNode)
        say(f"  restored {back.link} " + ("once the sender had ended" if gone else "at three quarters")
            + f": {back.cable}")
    mid = {n: {**before[n], **mid_counts[n]} for n in nics}
    return CutPoints(mid, rep.seconds, cut_at, restored_at, sent_at_cut, progress.sent(now, before), gone)


async def fabric_tables(fn: FabricNetwork, programs: tuple[str, ...] = ("fabric",)) -> dict[str, list[str]]:
    """Every entry of every fabric switch (or of every switch running one of
    ``programs``), read back over P4Runtime."""
    from controller.codec import codec
    from controller.p4rt import Session

    async def one(name: str) -> tuple[str, list[str]]:
        t = fn.inventory.switches[name]
        # a read needs no arbitration: BMv2 refuses a second primary stream of the same election
        # id while it still tears down the last one (``Election id already exists``)
        async with Session(t, primary=False) as s:
            return name, sorted(map(repr, await s.read_entries(codec(t.program, t.target))))

    names = [n.name for n in nodes(fn.topo) if n.program in programs]
    return dict(await asyncio.gather(*(one(n) for n in names)))


def flow_timers(targets: set[str]) -> tuple[list[str], list[str]]:
    """The demo transfer's timer options (mrc-send's, mrc-recv's): the transport's own
    (a 5 ms NACK delay, a 50 ms RTO floor) on the embedded target; on BMv2, whose
    software switches hold frames for tens of milliseconds under load, a 100 ms NACK
    delay and a 400 ms floor, as the failure experiment (docs/experiments.md)."""
    if "bmv2" in targets:
        return ["--rto-min", "0.4"], ["--nack-delay", "0.1"]
    return [], []


def run_flow(fn: FabricNetwork, src: str, dst: str, *, nbytes: int = 2_000_000, pps: float = 1000.0,
             cut: str | None = None, say: Say = lambda _: None) -> FlowResult:
    """One MRC-lite transfer of ``nbytes`` from ``src`` to ``dst`` over every EV of
    ``src``'s NIC, paced at ``pps``; with ``cut``, that link's cable goes down (no
    table is written) half-way through and back up at three quarters, and the
    transfer must still verify every byte."""
    import tempfile

    from controller.cable_cuts import set_link
    from topologies.transfer import Transfer

    s_host, d_host = fn.topo.host(src), fn.topo.host(dst)
    evs = P.nic_evs(fn.topo, s_host, d_host)
    nics = (s_host.nic, d_host.nic)
    seconds = nbytes / 1000 / pps  # 1,000-byte payloads
    packets = -(-nbytes // 1000)
    before = asyncio.run(_read(fn, list(nics)))
    points: CutPoints | None = None
    tables_before = tables_after = None

    send_timers, recv_timers = flow_timers({t.target for t in fn.inventory.switches.values()})
    with tempfile.TemporaryDirectory(prefix="mrc-demo-") as tmp:
        t = Transfer(fn, src, dst, nbytes, Path(tmp), timeout=seconds * 4 + 30,
                     send_args=["--rate", str(pps), *send_timers], recv_args=recv_timers)
        try:
            if cut is not None:
                tables_before = asyncio.run(fabric_tables(fn))
            t.start()
            if cut is not None:
                points = asyncio.run(cut_and_restore(fn, nics, before, packets, cut, seconds * 2 + 20, say))
            result = t.wait()
        finally:
            t.kill()
            if cut is not None and cut in fn.inventory.down:
                asyncio.run(set_link(fn.topo, fn.inventory, cut, down=False))
    after = asyncio.run(_read(fn, list(nics)))
    mid = after if points is None else points.mid  # without a cut, the whole transfer is "before"
    if cut is not None:
        tables_after = asyncio.run(fabric_tables(fn))
    first, second = delta(mid, before), delta(after, mid)
    crossing = sorted(p.ev for p in paths(fn.topo, s_host, d_host) if cut is not None and cut in p.links)
    events = result.sender.get("ev_events", [])
    t0 = result.sender.get("started_at_unix", 0.0)
    down_t = (points.cut_at - t0, points.restored_at - t0) if points is not None else None
    back = [e for e in events if e["event"] in ("recovered", "restored") and e["ev"] in crossing]
    return FlowResult(
        src, dst, nbytes, result.ok, result.sender, len(evs),
        _plane_counts(first[s_host.nic], "NicEgress.plane_tx"), _plane_counts(second[s_host.nic], "NicEgress.plane_tx"),
        _plane_counts(first[d_host.nic], "NicIngress.plane_rx"), _plane_counts(second[d_host.nic], "NicIngress.plane_rx"),
        cut, None if points is None else points.seconds,
        None if tables_before is None else tables_before == tables_after, result.errors, crossing,
        sorted({e["ev"] for e in events if e["event"] == "retired"}),
        sorted({e["ev"] for e in back if down_t and e["t"] >= down_t[1]}),
        sorted({e["ev"] for e in back if down_t and down_t[0] <= e["t"] < down_t[1]}))


def flow_ok(flow: FlowResult, planes: int) -> bool:
    """Did the transfer do what the fabric promises? Every byte verified and every plane
    carried packets; with a cut also: the fabric tables read back unchanged (None, not
    read, is no proof), some plane still carried packets after it, and no EV that avoids
    the cut cable was retired."""
    if not flow.verified or not all(flow.planes_before.get(p, 0) > 0 for p in range(planes)):
        return False
    if flow.cut is None:
        return True
    after = any(flow.planes_after.get(p, 0) > 0 for p in range(planes))
    return flow.fabric_unchanged is True and after and not flow.healthy_retired


def format_flow(flow: FlowResult, planes: int, paths_line: str, path_lines: Sequence[str] = ()) -> list[str]:
    """The demo's summary lines of one transfer (``paths_line``: the spines' per-path
    counts in one line; ``path_lines``: each path's, printed under it)."""
    r = flow.report
    retx = r.get("retransmissions", {})
    goodput = (r.get("goodput_bps") or 0) / 1e6
    phase = " before the cut" if flow.cut else ""
    lines = [f"MRC-lite transfer {flow.src} -> {flow.dst}: {flow.nbytes:,} bytes, "
             + ("every byte verified (SHA-256)" if flow.verified else "NOT verified")
             + (f" in {r['completion_time_s']:.2f} s ({goodput:.1f} Mb/s)" if r.get("completion_time_s") else ""),
             f"  {r.get('packets_sent', 0)} data packets over {flow.evs} EVs, {retx.get('total', 0)} retransmitted "
             f"({retx.get('timeout', 0)} timeout, {retx.get('nack', 0)} NACK, {retx.get('trim_nack', 0)} trim NACK), "
             f"{r.get('evs_retired', 0)} EVs retired, {r.get('evs_recovered', 0)} recovered",
             f"  per-plane split (source NIC's counters){phase}: {format_split(planes, flow.planes_before)}",
             f"  received per plane (destination NIC's counters){phase}: {format_split(planes, flow.delivered_before)}",
             f"  paths {paths_line}", *(f"    {ln}" for ln in path_lines)]
    lines += [f"  error: {e}" for e in flow.errors[-2:] if not flow.verified]
    if flow.cut:
        lines += [f"  after cutting {flow.cut}: {format_split(planes, flow.planes_after)}",
                  f"  cable cut, no table written; "
                  f"fabric tables {'unchanged' if flow.fabric_unchanged else 'CHANGED'} (read back before and after); "
                  "cable restored at three quarters",
                  f"  EVs retired {len(flow.retired)} of {len(flow.crossing)} across the cut (healthy EVs retired "
                  f"{len(flow.healthy_retired)}), recovered while down {len(flow.recovered_while_down)}, "
                  f"recovered after the restore {len(flow.recovered_after_restore)}"]
    return lines


@dataclass
class RoceResult:
    """The same bytes over one RoCEv2 RC queue pair (``--transport roce``) whose one
    path crosses the cut cable, cut and restored at the MRC-lite transfer's points."""

    src: str
    dst: str
    nbytes: int
    ev: int  # the EV the QP's source port hashes onto (endpoints/ecmp.py)
    source_port: int
    cut: str
    path: tuple[str, ...]  # the EV's switches
    verified: bool
    report: dict[str, Any]  # mrc-send --transport roce's JSON report ({} when it wrote none)
    report_path: Path
    points: CutPoints | None
    errors: list[str] = field(default_factory=list)


def roce_line_rate(pps: float, mtu: int = 1000) -> float:
    """The baseline's ``--line-rate`` (Mb/s) that paces it at ``pps`` packets of ``mtu``
    payload bytes (it counts each packet's payload and transport header)."""
    from endpoints.wire import DATA_HDR_LEN

    return pps * (mtu + DATA_HDR_LEN) * 8 / 1e6


def roce_qp(fn: FabricNetwork, src: str, dst: str, cut: str) -> tuple[int, int, tuple[str, ...]] | None:
    """A QP whose path crosses ``cut``: (EV, the lowest source port hashing onto it, its
    switches), the first such EV of the sender's list; None when no path crosses it."""
    from endpoints import ecmp
    from endpoints.wire import UDP_PORT_MRC

    s_host, d_host = fn.topo.host(src), fn.topo.host(dst)
    evs = [e.ev for e in P.nic_evs(fn.topo, s_host, d_host)]
    for p in paths(fn.topo, s_host, d_host):
        if cut in p.links:
            sport = ecmp.source_port_for_ev(fn.address(src), fn.address(dst), UDP_PORT_MRC, evs, p.ev)
            if sport is not None:
                return p.ev, sport, p.hops
    return None


def run_roce(fn: FabricNetwork, src: str, dst: str, cut: str, *, nbytes: int = 2_000_000, pps: float = 1000.0,
             say: Say = lambda _: None) -> RoceResult | None:
    """The RoCE baseline's transfer of ``nbytes`` on one QP over the cut cable, paced at
    ``pps`` (DCQCN starting there), the cable cut and restored at the points of
    ``run_flow``; its reports in the run directory (``demo-roce/``). None: no path
    crosses ``cut``."""
    import shutil

    from controller.cable_cuts import set_link
    from topologies.transfer import Transfer

    qp = roce_qp(fn, src, dst, cut)
    if qp is None:
        return None
    ev, sport, hops = qp
    nics = (fn.topo.host(src).nic, fn.topo.host(dst).nic)
    seconds = nbytes / 1000 / pps
    packets = -(-nbytes // 1000)
    workdir = fn.run_dir / "demo-roce"
    shutil.rmtree(workdir, ignore_errors=True)  # an earlier run's reports
    t = Transfer(fn, src, dst, nbytes, workdir, timeout=seconds * 4 + 30,
                 send_args=["--transport", "roce", "--line-rate", f"{roce_line_rate(pps):g}",
                            "--source-port", str(sport)], recv_args=["--transport", "roce"])
    before = asyncio.run(_read(fn, list(nics)))
    try:
        t.start()
        sender = t.senders[0]
        points = asyncio.run(cut_and_restore(fn, nics, before, packets, cut, seconds * 2 + 20, say,
                                             stop=lambda: sender.poll() is not None))
        _end_receiver(t)
        result = t.wait()
    finally:
        t.kill()
        if cut in fn.inventory.down:
            asyncio.run(set_link(fn.topo, fn.inventory, cut, down=False))
    return RoceResult(src, dst, nbytes, ev, sport, cut, hops, result.ok, result.sender, t.send_report_path(src),
                      points, result.errors)


def _end_receiver(t: Any, grace: float = 3.0) -> None:
    """Once the sender has ended: a QP in the error state never sends the receiver its
    end, which would wait out its whole timeout; give it ``grace`` seconds, then stop it."""
    import subprocess

    t.senders[0].wait(timeout=t.timeout + 30)
    if t.senders[0].returncode != 0 and t.receiver is not None:
        try:
            t.receiver.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            t.receiver.kill()


def roce_ok(roce: RoceResult) -> bool:
    """The baseline ran as the demo means it to: a report in either end state, from the
    QP on the EV chosen across the cut. Its failure is no failure of the demo."""
    r = roce.report
    return r.get("state") in ("complete", "error") and r.get("ev") == roce.ev and r.get("source_port") == roce.source_port


def format_roce(roce: RoceResult | None, flow: FlowResult) -> list[str]:
    """The summary's two lines on the same cut, MRC-lite's and the baseline's, and the
    baseline's details under them."""
    r = flow.report
    mrc_done = (f"complete in {r['completion_time_s']:.2f} s" if flow.verified and r.get("completion_time_s")
                else "NOT verified")
    lines = [f"the same cut ({flow.cut}) during two transfers of {flow.nbytes:,} bytes {flow.src} -> {flow.dst}:",
             f"  MRC-lite, sprayed over {flow.evs} EVs: {mrc_done}; EVs retired {len(flow.retired)} of "
             f"{len(flow.crossing)} across the cut, the others kept the transfer going"]
    if roce is None:
        return [*lines, "  RoCE baseline: skipped (no EV's path crosses the cut)"]
    q = roce.report
    g = q.get("go_back_n") or {}
    stall = f"stalled {q.get('longest_stall_s') or 0:.2f} s"
    resends = (f"{g.get('rewinds', 0)} go-back-N rewinds, {g.get('resent', 0)} packets resent "
               f"({g.get('naks_received', 0)} NAKs, {g.get('timeouts', 0)} timeouts)")
    if not q:
        head = "NO REPORT (" + "; ".join(roce.errors[-2:]) + ")"
    elif q.get("state") == "complete":
        head = f"complete in {q.get('completion_time_s') or 0:.2f} s after it {stall}, {resends}"
    else:
        head = (f"FAILED after its {g.get('retry_count', 0)} retries ({q.get('acked_bytes', 0):,} of "
                f"{roce.nbytes:,} bytes acknowledged), {stall}, {resends}")
    lines.append(f"  RoCE baseline, one QP on EV {roce.ev} across the cut: {head}")
    if q:
        p = roce.points
        cut = (f"; cut after {p.sent_at_cut} packets from the source NIC, restored after {p.sent_at_restore}"
               + (" (the QP had ended)" if p.sender_gone else "")) if p else ""
        lines.append(f"    QP source port {roce.source_port} (CRC-32 of its 4-tuple lands on EV {roce.ev}), path "
                     f"{' '.join(roce.path)}{cut}; report {roce.report_path}")
    return lines


def format_split(planes: int, counts: dict[int, int]) -> str:
    total = sum(counts.values())
    parts = []
    for p in range(planes):
        n = counts.get(p, 0)
        parts.append(f"plane {p}: {n}" + (f" ({100 * n / total:.0f}%)" if total else ""))
    return ", ".join(parts)
