"""Experiment 7, incast with congestion control: 4 senders into 1 receiver through a
limited port.

Why: in an incast the receiver's last hop has no other path, so spraying cannot help:
the senders' congestion control (docs/transport.md, "Congestion control") must hold
that port's queue near its ECN marking threshold, with no timeouts and equal shares.
The receiver's leaf in every plane is restarted with ``p4target run --queue-rate
PORT=PPS`` on the port to the receiver's NIC (experiments/trimming.py's shaping), and
the four senders run unpaced (the window alone decides), their first windows
together no more than the marking threshold per plane (``--initial-window``: 16 x
planes / 4; they leave before any feedback). The controller's own
``ecn_config`` marks that port above 16 packets; the trim threshold is set to 16 + 8
for the run (every port), so the leaves' ``FabricEgress.trimmed`` counter on the
limited port counts every packet that found more than 24 packets queued: none after
the first second (the start-up, counters read then) means the queue then never
passed the marking threshold by more than 8. Measured: per-sender
goodput and Jain's fairness index, retransmissions by cause (timeouts must be 0), CE
marks and trims on the limited ports; every byte checked by comparing each received
file with the data generated for its sender.
"""

from __future__ import annotations

import dataclasses
import random
import time
from pathlib import Path
from typing import Any

from controller.counters import delta
from experiments import common as C
from experiments.trimming import shape, shaped_leaves
from fabric.entries import ECN_THRESHOLD_HOST
from topologies.fabric_net import install_tables

MARGIN = 8  # packets above the marking threshold that the queue may reach
# The limited queue delays packets by up to (16 + 8) / PPS seconds: holes are NACKed,
# and timeouts fire, only well after that.
NACK_DELAY = 0.3
RTO_MIN = 0.3
STARTUP = 1.0  # seconds after the senders start: the start-up, before the bound is checked
SENDERS = ("h1", "h2", "h3", "h5")  # three from the other leaf, one from the receiver's
DST = "h4"


def jain(values: list[float]) -> float:
    """Jain's fairness index: 1 when all are equal, 1/n when one has everything."""
    return sum(values) ** 2 / (len(values) * sum(v * v for v in values)) if any(values) else 0.0


def _set_trim(fn: Any, threshold: int | None) -> None:
    fn.topo = dataclasses.replace(fn.topo, trim_threshold=threshold)
    rep = install_tables(fn)
    if rep.failed:
        raise RuntimeError(f"install failed: {rep.summary()}")


def incast(fn: Any, workdir: Path, senders: list[str], dst: str, nbytes: int) -> dict[str, Any]:
    workdir.mkdir(parents=True, exist_ok=True)
    inputs = {s: random.Random(f"incast-{s}").randbytes(nbytes) for s in senders}
    for s, data in inputs.items():
        (workdir / f"in-{s}").write_bytes(data)
    outfile = workdir / "received"
    before = C.read_counters(fn)
    # The first windows go out before any feedback: together they must fit under the
    # marking threshold of each plane's queue.
    first = max(2, ECN_THRESHOLD_HOST * fn.topo.planes // len(senders))
    tr = C.Transfer(fn, senders[0], dst, nbytes, workdir, ["--rto-min", str(RTO_MIN), "--initial-window", str(first)],
                    ["--nack-delay", str(NACK_DELAY), "--out", str(outfile), "--bytes", str(nbytes)],
                    count=len(senders))
    try:
        tr.start_receiver()
        for s in senders:
            tr.start_sender(s, ["--in", str(workdir / f"in-{s}")])
        time.sleep(STARTUP)
        settled = C.read_counters(fn)
        res = tr.wait()
    finally:
        tr.kill()
    after = C.read_counters(fn)
    d, late = delta(after, before), delta(after, settled)
    leaves, port = shaped_leaves(fn, dst)
    received = [outfile] + [outfile.with_name(f"{outfile.name}.{k}") for k in range(2, len(senders) + 1)]
    got = sorted(p.read_bytes() for p in received if p.exists())
    files_match = got == sorted(inputs.values())
    goodputs = {s: r.get("goodput_bps") or 0.0 for s, r in zip(senders, res.send_reports)}
    retx = {k: sum((r.get("retransmissions") or {}).get(k, 0) for r in res.send_reports)
            for k in ("total", "timeout", "nack", "trim_nack")}
    return {"ok": res.ok, "received_files_match": files_match, "summaries": [res.summary()],
            "initial_window": first,
            "goodput_bps": goodputs, "jain": jain(list(goodputs.values())),
            "completion_s": {s: r.get("completion_time_s") for s, r in zip(senders, res.send_reports)},
            "retransmissions": retx,
            "evs_retired": sum(r.get("evs_retired", 0) for r in res.send_reports),
            "ce_marked": sum(d.get(l, {}).get("FabricEgress.ecn_marked", {}).get(port, (0, 0))[0] for l in leaves),
            "trimmed": sum(d.get(l, {}).get("FabricEgress.trimmed", {}).get(port, (0, 0))[0] for l in leaves),
            "trimmed_after_startup": sum(late.get(l, {}).get("FabricEgress.trimmed", {}).get(port, (0, 0))[0]
                                         for l in leaves),
            "windows": {s: r.get("window") for s, r in zip(senders, res.send_reports)},
            "delivered_series": {s: r.get("delivered_series", []) for s, r in zip(senders, res.send_reports)}}


def run(fn: Any, workdir: Path, *, nbytes: int, port_rate: float, senders: tuple[str, ...] = SENDERS,
        dst: str = DST) -> dict[str, Any]:
    """Shape the receiver's port, set the trim threshold to the bound, run the incast;
    put the port and the entries back whatever happens."""
    threshold = fn.topo.trim_threshold
    bound = ECN_THRESHOLD_HOST + MARGIN
    out: dict[str, Any] = {"bytes_per_sender": nbytes, "port_rate_pps": port_rate, "planes": fn.topo.planes,
                           "senders": list(senders), "dst": dst, "ecn_threshold": ECN_THRESHOLD_HOST,
                           "queue_bound": bound}
    try:
        shape(fn, dst, port_rate)
        _set_trim(fn, bound)
        out.update(incast(fn, workdir, list(senders), dst, nbytes))
    finally:
        fn.topo = dataclasses.replace(fn.topo, trim_threshold=threshold)
        shape(fn, dst, None)
    return out


def acceptable(d: dict[str, Any]) -> bool:
    return (d["ok"] and d["received_files_match"] and d["retransmissions"]["timeout"] == 0 and d["jain"] >= 0.9
            and d["trimmed_after_startup"] == 0 and d["ce_marked"] > 0)


def figures(d: dict[str, Any]) -> list[str]:
    x = d["retransmissions"]
    return [f"incast: {', '.join(d['senders'])} -> {d['dst']}, {d['bytes_per_sender']} bytes each, unpaced; "
            f"receiver's leaf port limited to {d['port_rate_pps']:g} packets/s in each of {d['planes']} planes, "
            f"CE above {d['ecn_threshold']}, trim above {d['queue_bound']} packets",
            f"  verified={d['ok']}, files match={d['received_files_match']}, goodputs (Mb/s) "
            + ", ".join(f"{s} {C.mbps(v):.2f}" for s, v in d["goodput_bps"].items())
            + f", Jain {d['jain']:.3f}",
            f"  retransmissions {x['total']} (timeout {x['timeout']}, NACK {x['nack']}, trim NACK {x['trim_nack']}), "
            f"EVs retired {d['evs_retired']}, CE marked {d['ce_marked']}, trimmed (queue above "
            f"{d['queue_bound']}) {d['trimmed']}, of which after the first {STARTUP:g} s "
            f"{d['trimmed_after_startup']}"]


def plot(d: dict[str, Any]) -> Any:
    plt = C.pyplot()
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    for s, series in d["delivered_series"].items():
        a.plot([t for t, _ in series], [v / 1e6 for _, v in series], label=s)
    a.set_xlabel("seconds after the sender started")
    a.set_ylabel("MB acknowledged")
    a.set_title(f"incast into {d['dst']}")
    a.legend()
    names = list(d["goodput_bps"])
    b.bar(names, [C.mbps(d["goodput_bps"][s]) for s in names], color="tab:blue")
    b.set_ylabel("goodput, Mb/s")
    b.set_title(f"Jain {d['jain']:.3f}; {d['ce_marked']} CE, {d['trimmed']} above {d['queue_bound']}")
    return fig


def main(argv: list[str] | None = None) -> int:
    p = C.parser("experiments.incast", __doc__.split("\n\n")[0])
    p.add_argument("--bytes", type=int, default=1_000_000, help="bytes per sender (default 1 MB)")
    p.add_argument("--port-rate", type=float, default=500, help="the receiver's leaf port, packets/s per plane")
    args = p.parse_args(argv)
    C.setup(args)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp, C.programmed_fabric(C.topology(hosts_per_leaf=3), args.prefix) as fn:
        data = run(fn, Path(tmp), nbytes=args.bytes, port_rate=args.port_rate)
    print("\n".join(figures(data)))
    js, png = C.write_results("incast", data, plot(data), args.out_dir)
    print(f"results: {js}, {png}")
    return 0 if acceptable(data) else 1


if __name__ == "__main__":
    raise SystemExit(main())
