"""mrcctl events, probe, locate and guard: the controller's loop over the NICs' reports.

Why apart from controller/cli.py: these commands read the fabric's event log
(controller/events.py), probe paths from the hosts (controller/sweep.py), name the
broken link (fabric/locate.py) and deny it and give it back (controller/guard.py,
controller/repair.py); cli.py registers them (``register``) and keeps the rest.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.table import Table

from controller import counters as C
from controller.events import Filter, append, follow, log_path, read
from controller.guard import Action, Guard, GuardConfig
from controller.reconcile import Reconciler
from controller.repair import set_denied
from controller.sweep import EvResult, ProbeError, host_places, in_host, link_loss, observations, plan_for, sweep
from cli_common.options import seconds
from fabric.entries import nodes
from fabric.locate import Verdict, from_events, locate
from fabric.paths import PathInfo, find_link, paths
from fabric.topology import Topology
from fabric.wanted import wanted_entries
from controller.cli_base import Fail, Source, err, out, running_source, source_of
from controller.network_state import Inventory, state_path
from topologies.transfer import UDP_PORT_MRC, udp_listening

JsonOpt = Annotated[bool, typer.Option("--json", help="one JSON object per line instead of text")]


def _run_dir(inv: Inventory) -> Path:
    return (inv.path or state_path()).parent


def _running(ctx: typer.Context, what: str) -> Source:
    s = running_source(ctx, what)
    if not s.running:
        raise Fail(f"no running network ({s.inv.path}): nothing to {what}; start one (make run) or give its "
                       "state file with --state")
    return s


def _stamp(t: float) -> str:
    return datetime.fromtimestamp(t).strftime("%H:%M:%S.%f")[:-3]


def event_line(e: Mapping[str, Any]) -> str:
    """One record of the event log as a line of text."""
    if e.get("kind") == "guard":
        extra = ", ".join(f"{k} {v}" for k, v in e.items()
                          if k in ("reports", "hosts", "failed_paths", "answered_for_s", "denied_for_s", "reason"))
        dry = " (dry run)" if e.get("dry_run") else ""
        return f"{_stamp(float(e['t']))} guard {e.get('action')} {e.get('link')}{dry}: {extra}"
    dropped = f" [{e['dropped']} events lost before this one]" if e.get("dropped") else ""
    ev = e.get("ev")
    return (f"{_stamp(float(e['t']))} {e.get('host')}->{e.get('peer')} "
            f"{'EV ' + format(ev, '#06x') if isinstance(ev, int) else 'QP'} plane {e.get('plane')} "
            f"{e.get('old')} -> {e.get('new')} ({e.get('cause')}) {' > '.join(e.get('switches') or [])}{dropped}")


def _since(value: float | None) -> float | None:
    """--since: seconds ago (below 10^9) or a unix time."""
    if value is None:
        return None
    return value if value >= 1e9 else time.time() - value


def events(ctx: typer.Context,
           follow_: Annotated[bool, typer.Option("--follow", "-f", help="keep printing new events until Ctrl-C")] = False,
           since: Annotated[Optional[float], typer.Option(help="only events of the last SECONDS (or after this unix "
                                                                 "time)", metavar="SECONDS")] = None,
           host: Annotated[Optional[str], typer.Option(help="only events of this host (as sender or peer)")] = None,
           link: Annotated[Optional[str], typer.Option(help="only events whose path crosses this link")] = None,
           state: Annotated[Optional[str], typer.Option(help="only events to this state (GOOD, ASSUMED_BAD, ERROR; "
                                                              "deny/undeny for the guard's)")] = None,
           as_json: JsonOpt = False) -> None:
    """The fabric-wide stream of EV state changes (and the guard's actions) from the event log."""
    s = source_of(ctx)
    if link is not None:
        find_link(s.topo, link)
    if host is not None:
        s.topo.host(host)
    if since is not None and not since >= 0:
        raise Fail(f"--since {since}: give seconds (0 or more) or a unix time")
    log = log_path(_run_dir(s.inv))
    keep = Filter(since=_since(since), host=host, link=link, state=state)
    if not follow_ and not log.exists():
        raise Fail(f"no event log ({log}): no network has run with this run directory; start one (make run)")
    records = follow(log, keep) if follow_ else iter(read(log, keep))
    try:
        for e in records:
            sys.stdout.write((json.dumps(e) if as_json else event_line(e)) + "\n")
            sys.stdout.flush()
    except KeyboardInterrupt:
        pass


def _evs(texts: Sequence[str]) -> list[int]:
    out = []
    for t in texts:
        try:
            out.append(int(t, 0))
        except ValueError:
            raise typer.BadParameter(f"{t!r} is no EV: give a number, e.g. 0x1000 or 4096", param_hint="--ev") \
                from None
    return out


def _rtt_text(r: EvResult) -> str:
    j = r.json()
    if not r.answered:
        return "-"
    return f"{j['rtt_min_ms']:.2f} / {j['rtt_avg_ms']:.2f} / {j['rtt_max_ms']:.2f}"


def probe(ctx: typer.Context, src_host: Annotated[str, typer.Argument(metavar="SRC", help="the probing host, e.g. h1")],
          dst_host: Annotated[str, typer.Argument(metavar="DST", help="the host probed, e.g. h3")],
          ev: Annotated[Optional[list[str]], typer.Option("--ev", help="an EV to probe (repeat); default: --all")] = None,
          all_evs: Annotated[bool, typer.Option("--all", help="every EV of SRC's NIC towards DST")] = False,
          count: Annotated[int, typer.Option(min=1, max=1000, help="probes per EV")] = 5,
          interval: Annotated[float, typer.Option(callback=seconds, help="seconds between probes of one EV")] = 0.01,
          timeout: Annotated[float, typer.Option(callback=seconds, help="an answer later than this is lost")] = 0.5,
          as_json: JsonOpt = False) -> None:
    """Probe EVs from SRC's host towards DST (the transport's PROBE on each EV's own path):
    per EV its path, RTT min/avg/max and loss."""
    if ev and all_evs:
        raise typer.BadParameter("give --ev EV ... or --all, not both", param_hint="--all")
    chosen = _evs(ev) if ev else None  # a usage mistake before anything else
    s = _running(ctx, "probe")
    everything = plan_for(s.topo, [(src_host, dst_host)], chosen)
    plan = plan_for(s.topo, [(src_host, dst_host)], chosen, s.inv.denied)
    skipped = [p for p in everything[src_host][dst_host] if p not in plan.get(src_host, {}).get(dst_host, [])]
    for p in skipped:
        err.print(f"mrcctl probe: EV {p.ev:#06x} not probed: its path crosses a denied link (the NICs have no "
                      "entry for it; a probe on it would go over the NIC's spraying)", markup=False, highlight=False)
    if not plan:
        raise Fail(f"every EV asked for crosses a denied link ({', '.join(s.inv.denied)}); nothing probed")
    try:
        results = sweep(s.topo, _run_dir(s.inv), plan, count=count, interval=interval, timeout=timeout,
                        budget=30 + count * (interval + timeout) * 2)
    except ProbeError as exc:
        raise Fail(str(exc)) from None
    if results and results[0].error:
        raise Fail(f"probe {src_host} -> {dst_host}: {results[0].error}")
    if as_json:
        for r in results:
            sys.stdout.write(json.dumps(r.json()) + "\n")
        return
    answered = sum(1 for r in results if r.answered)
    table = Table(title=f"{src_host} -> {dst_host}: {len(results)} EVs probed ({count} each), {answered} answered")
    for col in ("EV", "plane", "path", "RTT min / avg / max (ms)", "loss"):
        table.add_column(col)
    for r in results:
        table.add_row(f"{r.path.ev:#06x}", str(r.path.plane), " > ".join(r.path.hops), _rtt_text(r),
                      f"{r.loss:.0%}" if r.loss is not None else "-")
    out.print(table)


async def _fabric_counters(targets: Sequence[Any]) -> dict[str, C.Counts]:
    return await C.read_all(targets)


def _counter_delta(s: Source, before: dict[str, C.Counts] | None) -> tuple[dict[str, C.Counts], dict[str, C.Counts]]:
    targets = [s.inv.switches[n.name] for n in nodes(s.topo) if n.program == "fabric"]
    now = asyncio.run(_fabric_counters(targets))
    return now, C.delta(now, before or {})


def _pairs(topo: Topology, hosts: str | None) -> list[tuple[str, str]]:
    names = [h.name for h in topo.hosts] if not hosts else [x.strip() for x in hosts.split(",") if x.strip()]
    for n in names:
        topo.host(n)
    return [(a, b) for a in names for b in names if a != b]


def verdict_json(v: Verdict, top: int) -> dict[str, Any]:
    return {"exact": v.exact, "cover": list(v.cover), "tied": list(v.tied), "failed_paths": v.failed,
            "working_paths": v.working, "unexplained": list(v.unexplained),
            "ranked": [{"link": x.link, "explains": len(x.explains), "contradicted": len(x.contradicted),
                        "sent": x.sent, "received": x.received, "examples": list(x.explains[:3])}
                       for x in v.ranked[:top]]}


def _print_verdict(v: Verdict, top: int, head: str) -> None:
    out.print(head, highlight=False)
    if v.failed == 0:
        out.print("  no failed path: no link to name", highlight=False)
        return
    if v.exact:
        x = next(r for r in v.ranked if r.link == v.exact)
        why = f"on {len(x.explains)} of {v.failed} failed paths, on no working path"
        if v.tied:
            why += (f"; the paths cannot tell it from {', '.join(t for t in v.tied if t != v.exact)}, its counters "
                    f"can ({x.sent} packets sent onto it, {x.received} received from it)")
        out.print(f"  broken: {v.exact} ({why})", highlight=False)
    elif v.tied:
        out.print(f"  broken: one of {', '.join(v.tied)} (each on every failed path and no working one; "
                      "no counter tells them apart)", highlight=False)
    else:
        out.print(f"  broken: {', '.join(v.cover) or 'none found'} (together on every failed path they explain)",
                      highlight=False)
    if v.unexplained:
        out.print(f"  unexplained: {len(v.unexplained)} failed paths ({', '.join(v.unexplained[:3])})",
                      highlight=False)
    table = Table()
    for col in ("rank", "link", "failed paths on it", "working paths on it", "counters sent/received", "e.g."):
        table.add_column(col)
    for i, x in enumerate(v.ranked[:top], 1):
        table.add_row(str(i), x.link, str(len(x.explains)), str(len(x.contradicted)),
                      f"{x.sent}/{x.received}" if x.sent or x.received else "-", ", ".join(x.explains[:2]))
    out.print(table)


def locate_cmd(ctx: typer.Context,
               do_sweep: Annotated[bool, typer.Option("--sweep", help="probe every pair of --hosts over all EVs "
                                                                       "instead of reading the events")] = False,
               hosts: Annotated[Optional[str], typer.Option(help="the sweep's hosts, comma-separated (default all)")] = None,
               window: Annotated[float, typer.Option(callback=seconds, help="events of the last SECONDS")] = 60.0,
               budget: Annotated[float, typer.Option(callback=seconds, help="the sweep's time budget, seconds")] = 60.0,
               count: Annotated[int, typer.Option(min=1, max=100, help="the sweep's probes per EV")] = 3,
               sample: Annotated[float, typer.Option(help="without --sweep: seconds of counters read (0: none)")] = 1.0,
               top: Annotated[int, typer.Option(min=1, help="suspects listed")] = 5,
               as_json: JsonOpt = False) -> None:
    """Name the link or links whose failure explains the failed paths and none of the
    working ones, from the recent EV events or from a probe sweep."""
    s = _running(ctx, "locate a link in")
    t0 = time.monotonic()
    before, _ = _counter_delta(s, None)
    if do_sweep:
        pairs = _pairs(s.topo, hosts)
        try:
            results = sweep(s.topo, _run_dir(s.inv), plan_for(s.topo, pairs, denied=s.inv.denied), count=count,
                            budget=budget)
        except ProbeError as exc:
            raise Fail(str(exc)) from None
        obs = observations(results)
        head = (f"locate: {len(obs)} paths probed between {len({p for pr in pairs for p in pr})} hosts "
                f"({sum(not o.ok for o in obs)} failed)")
    else:
        evs = read(log_path(_run_dir(s.inv)), Filter(since=time.time() - window, kind="ev"))
        obs = from_events(s.topo, evs)
        if sample > 0:
            time.sleep(sample)
        head = (f"locate: {len(evs)} events of the last {window:g} s, {len(obs)} paths of the pairs that reported "
                f"({sum(not o.ok for o in obs)} failed)")
    _, d = _counter_delta(s, before)
    v = locate(obs, link_loss(s.topo, d))
    if as_json:
        sys.stdout.write(json.dumps({**verdict_json(v, top), "seconds": round(time.monotonic() - t0, 2)}) + "\n")
        return
    _print_verdict(v, top, head + f" in {time.monotonic() - t0:.1f} s")


# ---- guard ------------------------------------------------------------------------


def _receiving(s: Source) -> set[str]:
    """The hosts where an MRC-lite receiver holds the MRC port now."""
    out = set()
    for name, place in host_places(_run_dir(s.inv)).items():
        r = subprocess.run(in_host(place, ["cat", "/proc/net/udp6", "/proc/net/udp"]), capture_output=True, text=True,
                           timeout=20)
        if r.returncode == 0 and udp_listening(r.stdout, UDP_PORT_MRC):
            out.add(name)
    return out


def _trial_paths(topo: Topology, link: str, hosts: Sequence[str], receiving: set[str],
                 limit: int = 4) -> tuple[str, str, list[PathInfo]]:
    """A pair of hosts and up to ``limit`` of its EVs whose paths cross ``link``; a pair
    whose destination holds its MRC port first (a receiver there answers the probes, no
    agent is started there; the source's agent never takes the port)."""
    pairs = [(a, b) for b in sorted(hosts, key=lambda h: h not in receiving) for a in hosts if a != b]
    for a, b in pairs:
        ps = [p for p in paths(topo, topo.host(a), topo.host(b)) if link in p.links]
        if ps:
            return a, b, ps[:limit]
    raise ProbeError(f"no path between the hosts crosses {link}")


async def _nic_entries(s: Source, nic: str, denied: Sequence[str]) -> None:
    wanted = wanted_entries(s.topo, denied, only=[n for n in nodes(s.topo) if n.name == nic])
    rep = await Reconciler([s.inv.switches[nic]]).run(wanted)
    if rep.failed:
        raise ProbeError(f"{nic}: {rep.failed[0].error}")


def probe_denied(s: Source, link: str, count: int) -> tuple[bool, dict[str, Any]]:
    """Probe denied ``link``: its paths are given back to one NIC (only that NIC's EVs over
    the denied links on them), probed from its host, then denied to it again."""
    receiving = _receiving(s)
    src, dst, ps = _trial_paths(s.topo, link, [h.name for h in s.topo.hosts], receiving)
    lifted = {k for p in ps for k in p.links} & set(s.inv.denied)
    nic = s.topo.host(src).nic
    asyncio.run(_nic_entries(s, nic, sorted(set(s.inv.denied) - lifted)))
    try:
        results = sweep(s.topo, _run_dir(s.inv), {src: {dst: ps}}, count=count, timeout=0.3, budget=30,
                        serve=dst not in receiving)
    finally:
        asyncio.run(_nic_entries(s, nic, sorted(s.inv.denied)))
    answered = sum(r.answered for r in results)
    return answered > 0 and all(r.answered for r in results), {
        "probe": f"{src}->{dst}", "evs": [f"{p.ev:#06x}" for p in ps], "answered": answered,
        "sent": sum(r.sent for r in results)}


def _tie_counters(s: Source, waiting: Sequence[str], before: dict[str, C.Counts]
                  ) -> tuple[dict[str, C.Counts], dict[str, tuple[int, int]] | None]:
    """The counters of the ends of the tied links the guard waits on, and what they lost
    since the last such read (a first read is followed by another, ``TIE_SAMPLE``
    seconds later); None: no tie."""
    if not waiting:
        return {}, None
    names = sorted({e for k in waiting for e in (find_link(s.topo, k).a, find_link(s.topo, k).b)})
    targets = [s.inv.switches[n] for n in names]
    if set(before) != set(names):
        before = asyncio.run(_fabric_counters(targets))
        time.sleep(TIE_SAMPLE)
    now = asyncio.run(_fabric_counters(targets))
    return now, link_loss(s.topo, C.delta(now, before))


TIE_SAMPLE = 0.2


def _act(s: Source, a: Action, dry_run: bool, log: Path, as_json: bool) -> None:
    if not dry_run and a.action in ("deny", "undeny"):
        r = asyncio.run(set_denied(s.topo, s.inv, a.link, denied=a.action == "deny"))
        a.evidence["nics_changed"] = len(r.changed)
        a.evidence["write_ms"] = round(r.seconds * 1000)
    rec = a.record(dry_run)
    append(log, rec)
    sys.stdout.write((json.dumps(rec) if as_json else event_line(rec)) + "\n")
    sys.stdout.flush()


def guard(ctx: typer.Context,
          k: Annotated[int, typer.Option("--k", min=1, help="ASSUMED_BAD reports crossing a link before it is denied")] = 3,
          min_hosts: Annotated[int, typer.Option(min=1, help="from at least this many hosts")] = 2,
          hold: Annotated[float, typer.Option(help="T: seconds of answered probes before a denied link is "
                                                   "given back")] = 5.0,
          window: Annotated[float, typer.Option(callback=seconds, help="seconds of events looked at")] = 10.0,
          max_share: Annotated[float, typer.Option(min=0.0, max=1.0, help="a plane's links denied at most "
                                                                         "(share)")] = 0.25,
          dry_run: Annotated[bool, typer.Option("--dry-run", help="decide and log, deny nothing")] = False,
          interval: Annotated[float, typer.Option(callback=seconds, help="seconds between rounds")] = 0.5,
          probe_every: Annotated[float, typer.Option(callback=seconds, help="seconds between probes of a denied "
                                                                           "link")] = 1.0,
          duration: Annotated[float, typer.Option(help="stop after SECONDS (0: until Ctrl-C)")] = 0.0,
          probe_count: Annotated[int, typer.Option(min=1, help="probes per EV of a denied link")] = 3,
          tie_wait: Annotated[float, typer.Option(help="seconds links the paths cannot tell apart wait for their "
                                                       "counters before all are denied")] = 2.0,
          as_json: JsonOpt = False) -> None:
    """The loop: deny a located link fabric-wide, probe it, give it back once it answers;
    every action logged (event log, kind guard) with its evidence."""
    s = _running(ctx, "guard")
    try:
        g = Guard(s.topo, GuardConfig(k=k, min_hosts=min_hosts, window=window, hold=hold, max_share=max_share,
                                      tie_wait=tie_wait))
    except ValueError as exc:
        raise Fail(str(exc)) from None
    log = log_path(_run_dir(s.inv))
    started = time.time()
    g.adopt(s.inv.denied, started)
    err.print(f"mrcctl guard: K={k} from {min_hosts}+ hosts in {window:g} s, given back after {hold:g} s of "
                  f"answered probes, at most {max_share:.0%} of a plane's links{', dry run' if dry_run else ''}; "
                  f"{len(g.denied)} denied now; log {log}", markup=False, highlight=False)
    end = time.monotonic() + duration if duration > 0 else float("inf")
    next_probe: dict[str, float] = {}
    counted: dict[str, C.Counts] = {}
    try:
        while time.monotonic() < end:
            counted, loss = _tie_counters(s, g.waiting, counted)
            now = time.time()
            recent = read(log, Filter(since=max(now - window, started), kind="ev"))  # what came before it: history
            for a in g.on_events(recent, now, loss):
                _act(s, a, dry_run, log, as_json)
            for link in list(g.denied):
                if dry_run or time.monotonic() < next_probe.get(link, 0.0):
                    continue
                next_probe[link] = time.monotonic() + probe_every
                try:
                    ok, detail = probe_denied(s, link, probe_count)
                except ProbeError as exc:
                    err.print(f"mrcctl guard: cannot probe {link}: {exc}", markup=False, highlight=False)
                    continue
                for a in g.on_probe(link, ok, time.time(), detail):
                    _act(s, a, dry_run, log, as_json)
            time.sleep(interval)
    except KeyboardInterrupt:
        pass


def register(app: typer.Typer) -> None:
    app.command("events")(events)
    app.command("probe")(probe)
    app.command("locate")(locate_cmd)
    app.command("guard")(guard)


__all__ = ["event_line", "register", "verdict_json"]
