"""Experiment 4, loss and reordering: ``tc netem`` on fabric links during a transfer.

Why netem on the cables: the switches' own drops are rare and bursty; netem gives a
steady random loss (``--loss`` percent, on every uplink of the source leaf in plane 0)
and reordering (``delay`` with jitter, on every uplink of the source leaf in plane 1:
packets on those paths overtake each other and arrive late against the other planes).
The transfer must complete with every byte verified. The qdiscs are on the root
namespace's ends of the veths and are removed afterwards (they also go with the veths
when the network stops).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from controller.paths import links
from experiments import common as C


def tc(*args: str) -> str:
    r = subprocess.run(["tc", *args], capture_output=True, text=True, timeout=20)
    if r.returncode != 0:
        raise RuntimeError(f"tc {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


class NetemMissing(RuntimeError):
    """The kernel has no netem qdisc (sch_netem not built or not loadable)."""


def netem_available(intf: str) -> bool:
    """Can a netem qdisc be added here? (Tried on ``intf`` and removed at once.)"""
    r = subprocess.run(["tc", "qdisc", "add", "dev", intf, "root", "netem", "delay", "1ms"], capture_output=True,
                       text=True, timeout=20)
    if r.returncode == 0:
        subprocess.run(["tc", "qdisc", "del", "dev", intf, "root"], capture_output=True, timeout=20)
    return r.returncode == 0


def netem_drops(intf: str) -> int:
    m = re.search(r"dropped (\d+)", tc("-s", "qdisc", "show", "dev", intf))
    return int(m.group(1)) if m else 0


def uplinks(fn: Any, plane: int, leaf: int) -> list[str]:
    """The leaf's ends (root namespace interfaces) of its cables to the spines in ``plane``."""
    return [fn.inventory.links[l.name].a_intf for l in links(fn.topo)
            if l.kind == "fabric" and l.plane == plane and l.leaf == leaf]


def run(fn: Any, workdir: Path, *, nbytes: int, rate: float, loss: float, delay_ms: float, jitter_ms: float,
        src: str = "h1", dst: str = "h3") -> dict[str, Any]:
    leaf = fn.topo.host(src).leaf
    lossy, jittery = uplinks(fn, 0, leaf), uplinks(fn, 1, leaf)
    if not netem_available(lossy[0]):
        raise NetemMissing(f"tc: this kernel ({os.uname().release}) has no netem qdisc (sch_netem); "
                           "run the experiment on a kernel with CONFIG_NET_SCH_NETEM")
    added: list[str] = []
    try:
        for intf in lossy:
            tc("qdisc", "add", "dev", intf, "root", "netem", "loss", f"{loss}%")
            added.append(intf)
        for intf in jittery:
            tc("qdisc", "add", "dev", intf, "root", "netem", "delay", f"{delay_ms}ms", f"{jitter_ms}ms")
            added.append(intf)
        res = C.run_transfer(fn, src, dst, nbytes, workdir, send_args=["--rate", str(rate)],
                             recv_args=["--nack-delay", "0.05"])
        dropped = {i: netem_drops(i) for i in lossy}
    finally:
        for intf in added:
            subprocess.run(["tc", "qdisc", "del", "dev", intf, "root"], capture_output=True, timeout=20)
    s = res.sender
    per_plane: dict[str, dict[str, int]] = {}
    for e in s.get("per_ev", []):
        p = per_plane.setdefault(str(e["plane"]), {"sent": 0, "retransmits": 0, "losses": 0})
        for k in p:
            p[k] += e[k]
    conn = (res.recv_report.get("connections") or [{}])[0]
    return {"bytes": nbytes, "rate_pps": rate, "loss_pct": loss, "delay_ms": delay_ms, "jitter_ms": jitter_ms,
            "lossy_links": lossy, "reordering_links": jittery, "ok": res.ok, "summary": res.summary(),
            "netem_dropped": dropped, "retransmissions": s.get("retransmissions"),
            "completion_time_s": s.get("completion_time_s"), "goodput_bps": s.get("goodput_bps"),
            "per_plane": per_plane, "receiver_counts": conn.get("counts", {}),
            "delivered_series": s.get("delivered_series", [])}


def figures(d: dict[str, Any]) -> list[str]:
    r = d["retransmissions"] or {}
    return [f"loss and reordering: {d['bytes']} bytes at {d['rate_pps']:g} packets/s; {d['loss_pct']}% loss on "
            f"{', '.join(d['lossy_links'])}; delay {d['delay_ms']} +- {d['jitter_ms']} ms on "
            f"{', '.join(d['reordering_links'])}",
            f"  every byte verified: {d['ok']}; completion {d['completion_time_s'] or 0:.2f} s, goodput "
            f"{C.mbps(d['goodput_bps'])} Mb/s",
            f"  netem dropped {sum(d['netem_dropped'].values())}; retransmissions {r.get('total')} (NACK "
            f"{r.get('nack')}, timeout {r.get('timeout')}); receiver duplicates "
            f"{d['receiver_counts'].get('duplicates', 0)}",
            "  per plane (sent/retransmits/losses): " + ", ".join(
                f"{p}: {v['sent']}/{v['retransmits']}/{v['losses']}" for p, v in sorted(d["per_plane"].items()))]


def plot(d: dict[str, Any]) -> Any:
    plt = C.pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    series = d["delivered_series"]
    axes[0].plot([t for t, _ in series], [b / 1e6 for _, b in series])
    axes[0].set_xlabel("seconds after the sender started")
    axes[0].set_ylabel("MB acknowledged")
    axes[0].set_title(f"progress (every byte verified: {d['ok']})")
    planes = sorted(d["per_plane"])
    axes[1].bar(planes, [d["per_plane"][p]["losses"] for p in planes], label="losses seen by the sender")
    axes[1].set_xticks(planes, [f"plane {p}" + (" (loss)" if p == "0" else " (reorder)" if p == "1" else "")
                                for p in planes])
    axes[1].set_title("losses per plane")
    fig.suptitle(f"{d['loss_pct']}% loss on plane 0, {d['delay_ms']} +- {d['jitter_ms']} ms jitter on plane 1")
    return fig


def main(argv: list[str] | None = None) -> int:
    p = C.parser(__doc__.split("\n\n")[0])
    p.add_argument("--bytes", type=int, default=8_000_000, help="bytes (default 8 MB)")
    p.add_argument("--rate", type=float, default=3000, help="sender pacing, packets/s")
    p.add_argument("--loss", type=float, default=2.0, help="percent lost on plane 0's uplinks")
    p.add_argument("--delay", type=float, default=5.0, help="ms of delay on plane 1's uplinks")
    p.add_argument("--jitter", type=float, default=4.0, help="ms of jitter (reordering) on plane 1's uplinks")
    args = p.parse_args(argv)
    C.setup(args)
    import tempfile

    try:
        with tempfile.TemporaryDirectory() as tmp, C.programmed_fabric(C.topology(), args.prefix) as fn:
            data = run(fn, Path(tmp), nbytes=args.bytes, rate=args.rate, loss=args.loss, delay_ms=args.delay,
                       jitter_ms=args.jitter)
    except NetemMissing as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print("\n".join(figures(data)))
    js, png = C.write_results("netem", data, plot(data), args.out_dir)
    print(f"results: {js}, {png}")
    return 0 if data["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
