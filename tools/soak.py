"""The soak: the default fabric for a long while, transfers back to back, a cable cut
every minute; the memory of every process of the network sampled all along.

``make soak`` (root; not part of ``make test``): ``tools/soak.py --minutes 30``. It
starts the default fabric (embedded target) under a prefix of its own, runs MRC-lite
transfers h1 -> h3 one after the other (each verifies every byte, SHA-256), and once
a minute cuts one of the cables of the transfers' paths for a few seconds (no table
written: the endpoints find the dead paths). Every ``--sample`` seconds it reads the
RSS of each switch process (the run directory's pid files) and of itself.

What it checks, and prints as figures (docs/performance.md, "Soak"): every transfer
verified; no EV retired that did not cross a cable cut during its transfer (a
healthy EV); no process's RSS more than 10 % above what it was after the warm-up (5
minutes, or a fifth of a shorter run). Exit 0 when all hold, 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SRC, DST = "h1", "h3"
GROWTH_LIMIT = 0.10


@dataclass
class Soak:
    minutes: float
    nbytes: int
    rate: float
    down_s: float
    sample_s: float
    cuts: list[dict[str, Any]] = field(default_factory=list)
    transfers: list[dict[str, Any]] = field(default_factory=list)
    rss: dict[str, list[tuple[float, int]]] = field(default_factory=dict)  # process -> (t, kB)
    t0: float = field(default_factory=time.time)


def rss_kb(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def processes(run_dir: Path) -> dict[str, int]:
    """The network's long-lived processes: each switch process (pid files), and this one."""
    out = {"soak (runner, Mininet)": os.getpid()}
    for f in sorted(run_dir.glob("*.pid")):
        try:
            out[f.stem] = int(f.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return out


def sampler(s: Soak, run_dir: Path, stop: threading.Event) -> None:
    while not stop.is_set():
        t = time.time() - s.t0
        for name, pid in processes(run_dir).items():
            kb = rss_kb(pid)
            if kb is not None:
                s.rss.setdefault(name, []).append((t, kb))
        stop.wait(s.sample_s)


def cutter(s: Soak, fn: Any, links: list[str], stop: threading.Event) -> None:
    """A cable of the paths cut once a minute for ``down_s`` seconds, in turn."""
    from controller.cable_cuts import set_link

    n = 0
    while not stop.wait(60.0 - s.down_s if n else 30.0):
        link = links[n % len(links)]
        n += 1
        t_down = time.time() - s.t0
        asyncio.run(set_link(fn.topo, fn.inventory, link, down=True))
        stop.wait(s.down_s)
        asyncio.run(set_link(fn.topo, fn.inventory, link, down=False))
        s.cuts.append({"link": link, "down": t_down, "up": time.time() - s.t0})


def one_transfer(s: Soak, fn: Any, workdir: Path) -> None:
    from topologies.transfer import run_transfer

    t_start = time.time() - s.t0
    res = run_transfer(fn, SRC, DST, s.nbytes, workdir, send_args=["--rate", str(s.rate)],
                       recv_args=["--nack-delay", "0.1"], timeout=120)
    retired = sorted({e["ev"] for e in res.sender.get("ev_events", []) if e["event"] == "retired"})
    s.transfers.append({"start": t_start, "end": time.time() - s.t0, "ok": res.ok, "bytes": s.nbytes,
                        "retired": retired, "summary": res.summary()})


def healthy_retired(s: Soak, crossing: dict[str, set[int]]) -> list[tuple[int, list[int]]]:
    """(transfer, EVs) retired without a cut of a cable they cross during that transfer."""
    out = []
    for i, t in enumerate(s.transfers):
        cut = set().union(*(crossing[c["link"]] for c in s.cuts
                            if c["down"] <= t["end"] and c["up"] + 1.0 >= t["start"]))
        bad = [ev for ev in t["retired"] if ev not in cut]
        if bad:
            out.append((i, bad))
    return out


def growth(s: Soak, warmup_s: float) -> dict[str, tuple[int, int, float]]:
    """Per process: (RSS kB just after the warm-up, the most after it, growth)."""
    out = {}
    for name, samples in s.rss.items():
        after = [kb for t, kb in samples if t >= warmup_s]
        if len(after) < 2:
            continue
        out[name] = (after[0], max(after), max(after) / after[0] - 1.0)
    return out


def report(s: Soak, crossing: dict[str, set[int]], warmup_s: float) -> tuple[bool, dict[str, Any]]:
    verified = [t for t in s.transfers if t["ok"]]
    bad = healthy_retired(s, crossing)
    grown = growth(s, warmup_s)
    worst = max((g for _, _, g in grown.values()), default=0.0)
    ok = bool(s.transfers) and len(verified) == len(s.transfers) and not bad and worst <= GROWTH_LIMIT
    figures = {"minutes": s.minutes, "transfers": len(s.transfers), "verified": len(verified),
               "bytes_verified": sum(t["bytes"] for t in verified), "cuts": len(s.cuts),
               "healthy_retired": bad, "warmup_s": warmup_s,
               "rss_after_warmup_and_most_kb": {k: v[:2] for k, v in grown.items()},
               "worst_growth": worst, "failed": [t["summary"] for t in s.transfers if not t["ok"]][:5]}
    return ok, figures


def print_figures(ok: bool, f: dict[str, Any]) -> None:
    print(f"soak: {f['minutes']:g} min, {f['transfers']} transfers, {f['verified']} verified "
          f"({f['bytes_verified']:,} bytes, every byte SHA-256), {f['cuts']} cable cuts, "
          f"{sum(len(b) for _, b in f['healthy_retired'])} healthy EVs retired")
    for name, (first, most) in f["rss_after_warmup_and_most_kb"].items():
        print(f"  {name:28s} RSS {first / 1024:7.1f} MB after the warm-up, at most {most / 1024:7.1f} MB "
              f"({(most / first - 1) * 100:+.1f} %)")
    for line in f["failed"]:
        print(f"  failed: {line}")
    print(f"result: {'OK' if ok else 'FAILED'} (worst growth {f['worst_growth'] * 100:+.1f} %, "
          f"limit {GROWTH_LIMIT * 100:.0f} %)")


def soak(s: Soak, workdir: Path) -> tuple[bool, dict[str, Any]]:
    from experiments import common as C
    from experiments.failure import crossing_evs
    from fabric.paths import links

    run_dir = workdir / "run"
    run_dir.mkdir()
    with C.programmed_fabric(C.topology(), run_dir=run_dir) as fn:
        s.t0 = time.time()
        src_leaf, dst_leaf = fn.topo.host(SRC).leaf, fn.topo.host(DST).leaf
        cables = [lk.name for lk in links(fn.topo) if lk.kind == "fabric" and lk.leaf in (src_leaf, dst_leaf)]
        crossing = {name: crossing_evs(fn, SRC, DST, name) for name in cables}
        stop = threading.Event()
        threads = [threading.Thread(target=sampler, args=(s, run_dir, stop), daemon=True),
                   threading.Thread(target=cutter, args=(s, fn, cables, stop), daemon=True)]
        for t in threads:
            t.start()
        try:
            while time.time() - s.t0 < s.minutes * 60:
                one_transfer(s, fn, workdir / f"t{len(s.transfers) % 2}")
        finally:
            stop.set()
            for t in threads:
                t.join(timeout=30)
        return report(s, crossing, min(300.0, s.minutes * 60 / 5))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0, help="how long (default 30)")
    parser.add_argument("--bytes", type=int, default=4_000_000, help="bytes per transfer (default 4,000,000)")
    parser.add_argument("--rate", type=float, default=4000.0, help="packets/s of each transfer (default 4,000)")
    parser.add_argument("--down", type=float, default=3.0, help="seconds each cut lasts (default 3)")
    parser.add_argument("--sample", type=float, default=10.0, help="seconds between RSS samples (default 10)")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = parser.parse_args(argv)
    if args.minutes <= 0 or args.bytes <= 0 or args.rate <= 0 or not 0 < args.down < 30 or args.sample <= 0:
        parser.error("--minutes, --bytes, --rate and --sample must be above 0, --down between 0 and 30")
    if os.geteuid() != 0:
        print("error: the soak starts a Mininet network: run it as root", file=sys.stderr)
        return 2
    s = Soak(args.minutes, args.bytes, args.rate, args.down, args.sample)
    with tempfile.TemporaryDirectory(prefix="mrc-soak-") as tmp:
        ok, figures = soak(s, Path(tmp))
    print_figures(ok, figures)
    if args.out:
        args.out.write_text(json.dumps({**figures, "transfers_log": s.transfers, "cuts_log": s.cuts,
                                        "rss": s.rss}, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
