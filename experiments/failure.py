"""Experiment 2, link failure: a spine link cut in the middle of a transfer.

Why these figures: MRC's promise is that a dead path costs the endpoints a few
retransmissions and nothing else. The cut is ``controller.repair.set_link`` (what
``mrcctl fail`` does: the Mininet cable goes down, the NICs' EV and spray entries that
cross it are rewritten, no fabric table is written). Measured: the transfer completes
with every byte verified (both exit statuses), the fabric's tables read back before
the cut and after the transfer are the same, the time from the cut to the sender's
first retirement of an EV whose path crosses the link, and the time until the
goodput (over 100 ms windows of the sender's delivered-bytes series) is back to 90%
of what it was before the cut.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from controller.paths import find_link
from controller.repair import set_link
from experiments import common as C
from topologies.demo import fabric_tables

WINDOW = 0.1  # seconds of the goodput windows


def goodput_series(series: list[list[float]], window: float = WINDOW) -> list[tuple[float, float]]:
    """(t, bits/s over the ``window`` seconds ending at t) from [[t, bytes acknowledged]]."""
    out = []
    j = 0
    for t, b in series:
        while series[j][0] < t - window:
            j += 1
        t0, b0 = series[j]
        if t - t0 >= window * 0.5:
            out.append((t, 8 * (b - b0) / (t - t0)))
    return out


def recovery(series: list[list[float]], cut_t: float) -> dict[str, float | None]:
    """Goodput before the cut (mean over the 0.5 s before it) and seconds after the cut
    until a window's goodput is back to 90% of it, after it first dipped below."""
    before = [(t, b) for t, b in series if cut_t - 0.5 <= t <= cut_t]
    pre = 8 * (before[-1][1] - before[0][1]) / (before[-1][0] - before[0][0]) if len(before) > 1 else None
    back = dip = None
    if pre:
        low = min(((t, g) for t, g in goodput_series(series) if cut_t < t <= cut_t + 1.0),
                  key=lambda x: x[1], default=None)
        dip = low[1] if low else None
        for t, g in goodput_series(series):
            if low and t > low[0] and g >= 0.9 * pre:
                back = t - cut_t
                break
        if low and low[1] >= 0.9 * pre:
            back = 0.0  # it never dipped
    return {"goodput_before_bps": pre, "lowest_after_bps": dip, "back_to_90pct_s": back}


def run(fn: Any, workdir: Path, *, nbytes: int, rate: float, cut_after: float, link: str = "p0-leaf0:p0-spine0",
        src: str = "h1", dst: str = "h3") -> dict[str, Any]:
    """One transfer; ``link`` cut ``cut_after`` seconds after the sender started; the link
    is restored after the transfer (and on any failure)."""
    cut = find_link(fn.topo, link)
    tables_before = asyncio.run(fabric_tables(fn))
    nics = [h.nic for h in fn.topo.hosts]
    tr = C.Transfer(fn, src, dst, nbytes, workdir, ["--rate", str(rate)], ["--nack-delay", "0.05"])
    cut_at = None
    repair = None
    try:
        tr.start()
        time.sleep(cut_after)
        cut_at = time.time()
        rep = asyncio.run(set_link(fn.topo, fn.inventory, link, down=True))
        repair = {"seconds": rep.seconds, "nics_changed": rep.changed, "cable": rep.cable}
        res = tr.wait()
        tables_after = asyncio.run(fabric_tables(fn))
    finally:
        tr.kill()
        if cut_at is not None:
            asyncio.run(set_link(fn.topo, fn.inventory, link, down=False))
    s = res.sender
    t0 = s.get("started_at_unix", cut_at)
    cut_t = cut_at - t0
    crossing = {e["ev"] for e in s.get("per_ev", []) if e["plane"] == cut.plane and e["spine"] == cut.other}
    retired = [e for e in s.get("ev_events", []) if e["event"] == "retired"]
    first = next((e for e in retired if e["ev"] in crossing and e["t"] >= cut_t), None)
    wrong = sorted({e["ev"] for e in retired if e["ev"] not in crossing})
    return {"bytes": nbytes, "rate_pps": rate, "link": link, "src": src, "dst": dst, "ok": res.ok,
            "summary": res.summary(), "cut_t": cut_t, "repair": repair,
            "fabric_tables_unchanged": tables_before == tables_after,
            "fabric_entries": sum(len(v) for v in tables_before.values()),
            "evs_crossing": len(crossing), "evs_retired": len({e["ev"] for e in retired}),
            "retired_not_crossing": wrong,
            "cut_to_first_retirement_s": None if first is None else first["t"] - cut_t,
            "retransmissions": s.get("retransmissions"), "goodput_bps": s.get("goodput_bps"),
            "completion_time_s": s.get("completion_time_s"), "ev_events": s.get("ev_events", []),
            "delivered_series": s.get("delivered_series", []), "nics": nics,
            **recovery(s.get("delivered_series", []), cut_t)}


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x * 1000:.0f} ms"


def figures(d: dict[str, Any]) -> list[str]:
    r = d["retransmissions"] or {}
    return [f"link failure: {d['bytes']} bytes {d['src']} -> {d['dst']} at {d['rate_pps']:g} packets/s, "
            f"{d['link']} cut {d['cut_t']:.2f} s after the start",
            f"  completed, every byte verified: {d['ok']}; completion {d['completion_time_s'] or 0:.2f} s, "
            f"goodput {C.mbps(d['goodput_bps'])} Mb/s",
            f"  fabric tables read back before and after ({d['fabric_entries']} entries): "
            f"{'unchanged' if d['fabric_tables_unchanged'] else 'CHANGED'}; NICs rewritten "
            f"{len(d['repair']['nics_changed'])} in {_ms(d['repair']['seconds'])}",
            f"  cut -> first retirement of an EV across the link: {_ms(d['cut_to_first_retirement_s'])}; "
            f"EVs retired {d['evs_retired']} (of {d['evs_crossing']} across the link)",
            f"  goodput before the cut {C.mbps(d['goodput_before_bps'])} Mb/s, lowest after "
            f"{C.mbps(d['lowest_after_bps'])} Mb/s, back to 90% {_ms(d['back_to_90pct_s'])} after the cut",
            f"  retransmissions {r.get('total')} (timeout {r.get('timeout')}, NACK {r.get('nack')})"]


def plot(d: dict[str, Any]) -> Any:
    plt = C.pyplot()
    fig, ax = plt.subplots(figsize=(9, 4))
    g = goodput_series(d["delivered_series"])
    ax.plot([t for t, _ in g], [v / 1e6 for _, v in g], label="goodput (100 ms windows)")
    ax.axvline(d["cut_t"], color="red", linestyle="--", label=f"{d['link']} cut")
    for e in d["ev_events"]:
        if e["event"] == "retired":
            ax.axvline(e["t"], color="orange", alpha=0.3, linewidth=0.8)
    ax.plot([], [], color="orange", alpha=0.5, label="an EV retired")
    ax.set_xlabel("seconds after the sender started")
    ax.set_ylabel("Mb/s")
    ax.set_title(f"Link failure during a {d['bytes'] / 1e6:g} MB transfer (every byte verified: {d['ok']})")
    ax.legend(loc="lower right")
    return fig


def main(argv: list[str] | None = None) -> int:
    p = C.parser("experiments.failure", __doc__.split("\n\n")[0])
    p.add_argument("--bytes", type=int, default=12_000_000, help="bytes (default 12 MB)")
    p.add_argument("--rate", type=float, default=4000, help="sender pacing, packets/s")
    p.add_argument("--cut-after", type=float, default=1.5, help="seconds after the start")
    p.add_argument("--link", default="p0-leaf0:p0-spine0", help="the spine link to cut")
    args = p.parse_args(argv)
    C.setup(args)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp, C.programmed_fabric(C.topology(), args.prefix) as fn:
        data = run(fn, Path(tmp), nbytes=args.bytes, rate=args.rate, cut_after=args.cut_after, link=args.link)
    print("\n".join(figures(data)))
    js, png = C.write_results("failure", data, plot(data), args.out_dir)
    print(f"results: {js}, {png}")
    return 0 if data["ok"] and data["fabric_tables_unchanged"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
