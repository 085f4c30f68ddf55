"""Experiment 9, the fleet: many transfers, one cable cut, with and without the guard;
and the localization of every spine link.

Why: a sender learns a dead path alone, by losing packets on it; with the reports of
many senders the controller names the link and denies it everywhere, so the senders
that never crossed it stop using it before they lose a packet (docs/mrcctl.md,
"guard"). Fleet part: 8 transfers between 8 different pairs of hosts (the fabric of
the experiments with 8 hosts per leaf: each host one end of one transfer, half of
them from leaf 0 to leaf 1, half back), 4 started first, the cable
``p0-leaf0:p0-spine0`` cut once they run, the other 4 started ``gap`` seconds after
the cut; the cable restored once all are done. Once without the guard, once with
``mrcctl guard`` running (K reports from 2 hosts). Measured: the packets the switches
sent onto the dead cable (its two ends' ``tx_port`` counters while it is down), the
retransmissions, the time from the cut to the last EV crossing the cable avoided
(retired by its sender, or denied by the guard, whichever came first; over every
transfer), every byte verified, and the guard's actions. Localization part, on the
experiments' default fabric: every leaf-spine cable cut in turn, ``mrcctl locate
--sweep`` must name it; then pairs of cables cut at once must both be in its top list.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from controller.counters import delta
from experiments import common as C
from fabric.paths import find_link, links, paths
from controller.cable_cuts import set_link

CUT = "p0-leaf0:p0-spine0"
# 6 hosts per leaf (h1..h6 on leaf 0, h7..h12 on leaf 1); a host sends or receives,
# never both (both would hold its one MRC port); each receiver takes two transfers.
FIRST = (("h1", "h7"), ("h2", "h8"), ("h9", "h5"), ("h10", "h6"))  # running when the cable is cut
LATER = (("h3", "h7"), ("h4", "h8"), ("h11", "h5"), ("h12", "h6"))  # started after the cut
FLEET_SHAPE = {"hosts_per_leaf": 6}
TWO_AT_ONCE = (("p0-leaf0:p0-spine0", "p2-leaf1:p2-spine1"), ("p1-leaf1:p1-spine0", "p3-leaf0:p3-spine1"))
MRCCTL = Path(sys.executable).parent / "mrcctl"
# The timers (docs/experiments.md, "The transport's timers"): the transport's own on the
# embedded target; on BMv2 a hole is NACKed after 100 ms and the RTO floor is 400 ms,
# the timers the experiment was measured with there.
NACK_DELAY: float | None = None
RTO_MIN: float | None = None
BMV2_TIMERS = {"nack_delay": 0.1, "rto_min": 0.4}


def mrcctl(fn: Any, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MRC_P4_RUN_DIR": str(fn.run_dir)}
    return subprocess.run([str(MRCCTL), "--state", str(fn.state_path), *args], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=C.REPO)


def dead_link_packets(fn: Any, d: dict[str, Any], name: str) -> int:
    """Packets the two ends of cable ``name`` sent onto it (tx_port counter deltas)."""
    k = find_link(fn.topo, name)
    return int(sum(d.get(sw, {}).get("FabricEgress.tx_port", {}).get(port, (0, 0))[0]
                   for sw, port in ((k.a, k.a_port), (k.b, k.b_port))))


def crossing(fn: Any, src: str, dst: str, link: str) -> set[int]:
    return {p.ev for p in paths(fn.topo, fn.topo.host(src), fn.topo.host(dst)) if link in p.links}


def _receivers(fn: Any, workdir: Path, nbytes: int, rate: float,
               timers: tuple[float | None, float | None]) -> dict[str, Any]:
    """One receiver per destination, for its two transfers, listening (``timers``: the
    NACK delay and the RTO floor, None: the transport's)."""
    out = {}
    send, recv = C.timer_args(*timers)
    for dst in sorted({d for _, d in FIRST + LATER}):
        tr = C.Transfer(fn, dst, dst, nbytes, workdir / dst, ["--rate", str(rate), *send], recv,
                        timeout=120, count=2)
        tr.start_receiver()
        out[dst] = tr
    for tr in out.values():
        tr.wait_listening()
    return out


def _guard_start(fn: Any, workdir: Path, k: int, hold: float) -> tuple[subprocess.Popen[bytes], Path]:
    out = workdir / "guard.jsonl"
    env = {**os.environ, "MRC_P4_RUN_DIR": str(fn.run_dir)}
    with out.open("wb") as f:
        proc = subprocess.Popen([str(MRCCTL), "--state", str(fn.state_path), "guard", "--k", str(k), "--min-hosts", "2",
                                 "--hold", f"{hold:g}", "--window", "10", "--interval", "0.2", "--probe-every", "1",
                                 # two leaves: every path over the cut cable crosses its twin at the spine too, so
                                 # denying both at once takes no working path away; no wait for counters
                                 "--tie-wait", "0",
                                 "--json"], stdout=f, stderr=subprocess.DEVNULL, env=env, cwd=C.REPO)
    return proc, out


def _actions(path: Path) -> list[dict[str, Any]]:
    try:
        return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    except (OSError, ValueError):
        return []


def _wait_given_back(path: Path, timeout: float) -> list[dict[str, Any]]:
    """The guard's actions once every link it denied is given back (or the timeout)."""
    deadline = time.monotonic() + timeout
    while True:
        acts = _actions(path)
        denied = {a["link"] for a in acts if a["action"] == "deny"}
        back = {a["link"] for a in acts if a["action"] == "undeny"}
        if (denied and denied <= back) or time.monotonic() > deadline:
            return acts
        time.sleep(0.2)


def _transfer_figures(fn: Any, res: Any, src: str, dst: str, avoided_by_guard: float | None) -> dict[str, Any]:
    """One sender's figures (``res``: its receiver's two transfers)."""
    order = [a for a, b in FIRST + LATER if b == dst]  # the order the receiver's senders were started in
    at = order.index(src)
    s = res.send_reports[at] if at < len(res.send_reports) else {}
    ok = at < len(res.send_codes) and res.send_codes[at] == 0 and bool(s.get("ok"))
    t0 = float(s.get("started_at_unix") or 0.0)
    cross = crossing(fn, src, dst, CUT)
    retired = {e["ev"]: t0 + e["t"] for e in s.get("ev_events", []) if e["event"] == "retired" and e["ev"] in cross}
    healthy = {e["ev"] for e in s.get("ev_events", []) if e["event"] == "retired" and e["ev"] not in cross}
    avoided = {ev: min(retired.get(ev, float("inf")), avoided_by_guard or float("inf")) for ev in cross}
    x = s.get("retransmissions") or {}
    return {"src": src, "dst": dst, "ok": ok, "started_at": t0, "retransmissions": x.get("total", 0),
            "evs_crossing": len(cross), "crossing_retired": len(retired), "healthy_retired": len(healthy),
            "last_avoided_at": max(avoided.values(), default=None),
            "completion_time_s": s.get("completion_time_s"), "goodput_bps": s.get("goodput_bps")}


def fleet(fn: Any, workdir: Path, *, guard: bool, nbytes: int, rate: float, gap: float, k: int,
          hold: float, timers: tuple[float | None, float | None] = (NACK_DELAY, RTO_MIN)) -> dict[str, Any]:
    """One fleet run: the first transfers, the cut, the later ones, the restore."""
    workdir.mkdir(parents=True, exist_ok=True)
    ends = [find_link(fn.topo, CUT).a, find_link(fn.topo, CUT).b]
    g = _guard_start(fn, workdir, k, hold) if guard else None
    nodes = fn.net.nameToNode
    cut_at = None
    receivers: dict[str, Any] = {}
    try:
        time.sleep(1.0 if guard else 0.0)  # the guard's start-up
        receivers = _receivers(fn, workdir, nbytes, rate, timers)
        for src, dst in FIRST:
            receivers[dst].start_sender(src)
        time.sleep(1.0)  # the first transfers run
        before = C.read_counters(fn, ends)
        asyncio.run(set_link(fn.topo, fn.inventory, CUT, down=True, nodes=nodes))
        cut_at = time.time()
        time.sleep(gap)
        for src, dst in LATER:
            receivers[dst].start_sender(src)
        done = {dst: tr.wait() for dst, tr in receivers.items()}
        d = delta(C.read_counters(fn, ends), before)
    finally:
        for tr in receivers.values():
            tr.kill()
        asyncio.run(set_link(fn.topo, fn.inventory, CUT, down=False, nodes=nodes))
    restored_at = time.time()
    acts: list[dict[str, Any]] = []
    if g is not None:
        acts = _wait_given_back(g[1], 60)
        g[0].terminate()
        g[0].wait(timeout=30)
    for name in sorted(set(fn.reload_inventory().denied)):  # what the guard left denied: given back here
        mrcctl(fn, "undeny", name)
    deny = next((a for a in acts if a["action"] == "deny" and a["link"] == CUT), None)
    denied_at = None if deny is None else deny["t"] + deny.get("write_ms", 0) / 1000
    rows = [_transfer_figures(fn, done[dst], src, dst, denied_at) for src, dst in FIRST + LATER]
    last = max((r["last_avoided_at"] for r in rows if r["last_avoided_at"] is not None), default=None)
    undeny = [a for a in acts if a["action"] == "undeny"]
    return {"guard": guard, "transfers": rows, "all_ok": all(r["ok"] for r in rows),
            "bytes_verified": sum(nbytes for r in rows if r["ok"]),
            "dead_link_packets": dead_link_packets(fn, d, CUT),
            "retransmissions": sum(r["retransmissions"] for r in rows),
            "healthy_retired": sum(r["healthy_retired"] for r in rows),
            "cut_to_last_crossing_avoided_s": None if last is None or cut_at is None or last == float("inf")
            else last - cut_at,
            "crossing_never_avoided": sum(r["evs_crossing"] for r in rows if r["last_avoided_at"] == float("inf")),
            "denied_links": sorted({a["link"] for a in acts if a["action"] == "deny"}),
            "cut_to_deny_s": None if denied_at is None or cut_at is None else denied_at - cut_at,
            "restore_to_undeny_s": None if not undeny else max(a["t"] for a in undeny) - restored_at,
            "guard_actions": acts}


def _locate(fn: Any, cut: tuple[str, ...]) -> dict[str, Any]:
    for name in cut:
        asyncio.run(set_link(fn.topo, fn.inventory, name, down=True, nodes=fn.net.nameToNode))
    try:
        r = mrcctl(fn, "locate", "--sweep", "--count", "2", "--top", "5", "--json")
    finally:
        for name in cut:
            asyncio.run(set_link(fn.topo, fn.inventory, name, down=False, nodes=fn.net.nameToNode))
    v = json.loads(r.stdout) if r.returncode == 0 and r.stdout.strip() else {"error": r.stderr.strip()}
    top = [x["link"] for x in v.get("ranked", [])]
    return {"cut": list(cut), "exact": v.get("exact"), "top": top, "tied": v.get("tied"),
            "failed_paths": v.get("failed_paths"), "seconds": v.get("seconds"), "error": v.get("error"),
            "named": v.get("exact") == cut[0] if len(cut) == 1 else set(cut) <= set(top)}


def localization(fn: Any) -> dict[str, Any]:
    single = [_locate(fn, (k.name,)) for k in links(fn.topo) if k.kind == "fabric"]
    double = [_locate(fn, pair) for pair in TWO_AT_ONCE]
    return {"single": single, "named": sum(r["named"] for r in single), "cut": len(single),
            "double": double, "double_both_in_top": sum(r["named"] for r in double)}


def figures(d: dict[str, Any]) -> list[str]:
    lines = [f"fleet: {len(FIRST) + len(LATER)} transfers of {d['bytes']} bytes at {d['rate_pps']:g} packets/s "
             f"between different pairs, {CUT} cut after the first {len(FIRST)} started, the other "
             f"{len(LATER)} started {d['gap_s']:g} s after the cut; guard K={d['k']} from 2 hosts, given back "
             f"after {d['hold_s']:g} s of answered probes"]
    for key in ("without_guard", "with_guard"):
        r = d[key]
        avoided = r["cut_to_last_crossing_avoided_s"]
        lines.append(f"  {key.replace('_', ' ')}: packets sent onto the dead link {r['dead_link_packets']}, "
                     f"retransmissions {r['retransmissions']}, healthy EVs retired {r.get('healthy_retired', '-')}, "
                     f"cut -> last crossing EV avoided "
                     f"{'-' if avoided is None else f'{avoided * 1000:.0f} ms'}, bytes verified "
                     f"{r['bytes_verified']} of {d['bytes'] * 8} ({'all' if r['all_ok'] else 'NOT all'})")
    g = d["with_guard"]
    if g["denied_links"]:
        lines.append(f"  guard: denied {', '.join(g['denied_links'])} {g['cut_to_deny_s'] * 1000:.0f} ms after the "
                     f"cut; given back {g['restore_to_undeny_s'] or 0:.1f} s after the restore")
    loc = d["localization"]
    lines.append(f"localization: every leaf-spine cable cut in turn, `mrcctl locate --sweep` named it: "
                 f"{loc['named']} of {loc['cut']}; two cables cut at once, both in its top 5: "
                 f"{loc['double_both_in_top']} of {len(loc['double'])}")
    for r in loc["single"]:
        if not r["named"]:
            lines.append(f"  missed {r['cut'][0]}: exact {r['exact']}, top {r['top']}, {r['error'] or ''}")
    for r in loc["double"]:
        lines.append(f"  {' + '.join(r['cut'])}: top {', '.join(r['top'])}")
    return lines


def plot(d: dict[str, Any]) -> Any:
    plt = C.pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    keys = ["without_guard", "with_guard"]
    names = ["without guard", "with guard"]
    for ax, metric, label in ((axes[0], "dead_link_packets", "packets sent onto the dead link"),
                              (axes[1], "retransmissions", "retransmissions (all transfers)")):
        ax.bar(names, [d[k][metric] for k in keys], color=["grey", "tab:blue"])
        ax.set_title(label)
    axes[2].bar(names, [(d[k]["cut_to_last_crossing_avoided_s"] or 0) * 1000 for k in keys], color=["grey", "tab:blue"])
    axes[2].set_title("cut -> last crossing EV avoided (ms)")
    return fig


TIMERS = {"nack_delay": NACK_DELAY, "rto_min": RTO_MIN}
DEFAULTS = C.Defaults(embedded={"nbytes": 2_000_000, "rate": 1000.0, **TIMERS},
                      bmv2={"nbytes": 400_000, "rate": 300.0, **BMV2_TIMERS},
                      shape=FLEET_SHAPE, bmv2_shape={**C.BMV2_SHAPE, **FLEET_SHAPE})


def acceptable(d: dict[str, Any]) -> bool:
    """Every byte verified in both runs; with the guard fewer packets onto the dead link
    and the crossing EVs avoided sooner; every cut cable named, both of every pair in the top list."""
    a, b, loc = d["without_guard"], d["with_guard"], d["localization"]
    sooner = (b["cut_to_last_crossing_avoided_s"] is not None and a["cut_to_last_crossing_avoided_s"] is not None
              and b["cut_to_last_crossing_avoided_s"] < a["cut_to_last_crossing_avoided_s"])
    return bool(a["all_ok"] and b["all_ok"] and b["dead_link_packets"] < a["dead_link_packets"] and sooner
                and loc["named"] == loc["cut"] and loc["double_both_in_top"] == len(loc["double"]))


def run_all(opts: C.Options, *, nbytes: int, rate: float, gap: float, k: int, hold: float,
            localize: bool = True, nack_delay: float | None = NACK_DELAY,
            rto_min: float | None = RTO_MIN) -> int:
    logging.basicConfig(level=logging.INFO if opts.verbose else logging.WARNING, format="%(name)s: %(message)s")
    if os.geteuid() != 0:
        print("error: the experiments run a Mininet network: run them as root", file=sys.stderr)
        return 2
    from topologies.p4switch import choose_target

    try:
        target = choose_target(opts.target)
    except ValueError as exc:
        print(f"error: --target: {exc}", file=sys.stderr)
        return 2
    data: dict[str, Any] = {"bytes": nbytes, "rate_pps": rate, "gap_s": gap, "k": k, "hold_s": hold, "target": target,
                            "cut": CUT, "timers": {"nack_delay": nack_delay, "rto_min": rto_min}}
    try:
        with tempfile.TemporaryDirectory(prefix="mrc-fleet-") as tmp:
            with C.programmed_fabric(C.topology(**DEFAULTS.fabric_shape(target)), opts.prefix, target=target) as fn:
                for key, guard in (("without_guard", False), ("with_guard", True)):
                    data[key] = fleet(fn, Path(tmp) / key, guard=guard, nbytes=nbytes, rate=rate, gap=gap, k=k,
                                      hold=hold, timers=(nack_delay, rto_min))
            if localize:
                with C.programmed_fabric(C.topology(), opts.prefix, target=target) as fn:
                    data["localization"] = localization(fn)
            else:
                data["localization"] = {"single": [], "named": 0, "cut": 0, "double": [], "double_both_in_top": 0}
    except (RuntimeError, OSError) as exc:
        print(f"error: experiments.fleet on the {target} target: {exc}", file=sys.stderr)
        return 1
    print("\n".join(figures(data)))
    js, png = C.write_results("fleet", data, plot(data), opts.out_dir)
    print(f"results: {js}, {png}")
    return 0 if acceptable(data) else 1


app = C.app(__doc__.split("\n\n")[0])


@app.command()
def cli(nbytes: Annotated[Optional[int], C.bytes_option(DEFAULTS, "bytes per transfer")] = None,
        rate: Annotated[Optional[float], C.rate_option(DEFAULTS)] = None,
        gap: Annotated[float, typer.Option(min=0.0, help="seconds from the cut to the later transfers' start")] = 3.0,
        k: Annotated[int, typer.Option("--k", min=1, help="the guard's K (reports before a denial)")] = 3,
        hold: Annotated[float, typer.Option(min=0.0, help="the guard's T (seconds of answered probes)")] = 2.0,
        localize: Annotated[bool, typer.Option("--localize/--no-localize",
                                               help="also cut every spine link in turn and locate it")] = True,
        nack_delay: Annotated[Optional[float], C.nack_delay_option(DEFAULTS)] = None,
        rto_min: Annotated[Optional[float], C.rto_min_option(DEFAULTS)] = None,
        out_dir: C.OutDirOpt = C.RESULTS, prefix: C.PrefixOpt = None, target: C.TargetOpt = "embedded",
        verbose: C.VerboseOpt = False) -> int:
    """Run the fleet experiment (see above)."""
    chosen = "bmv2" if target == "bmv2" else "embedded"
    sizes = DEFAULTS.sizes(chosen, {"nbytes": nbytes, "rate": rate, "nack_delay": nack_delay,
                                            "rto_min": rto_min})
    return run_all(C.Options(out_dir, prefix, target, verbose), gap=gap, k=k, hold=hold, localize=localize, **sizes)


def main(argv: list[str] | None = None) -> int:
    return C.command(app, "experiments.fleet", argv, DEFAULTS)


if __name__ == "__main__":
    raise SystemExit(main())

