"""Experiment 7, incast with congestion control: 4 senders into 1 receiver through a
limited port.

Why: in an incast the receiver's last hop has no other path, so spraying cannot help:
the senders' congestion control (docs/transport.md, "Congestion control") must hold
that port's queue near its ECN marking threshold, with no timeouts and equal shares.
The receiver's leaf in every plane is restarted with ``p4target run --queue-rate
PORT=PPS`` on the port to the receiver's NIC (experiments/trimming.py's shaping), and
the four senders run unpaced (the window alone decides), their first windows
together no more than the marking threshold per plane (``--initial-window``: 16 x
planes / 4; they leave before any feedback) and with the network's base RTT given
(``--cc-base-rtt``, below). The controller's own ``ecn_config`` marks that port above
16 packets and its ``trim_config`` trims above 32. The queue itself is read from the
leaves' ``FabricEgress.max_qdepth`` register (the deepest queue a packet found at
that port, fabric.p4) over P4Runtime (over Thrift on BMv2): reset before the senders
start, read and reset again ``STARTUP`` seconds after (the start-up: the first
windows leave before any feedback), read at the end. The senders start together,
within milliseconds, through experiments/start_together.py's barrier (once the
receiver listens). The bound for the time after the start-up is the marking
threshold plus ``margin(senders)``. Measured: per-sender goodput and Jain's fairness
index, retransmissions by cause (timeouts must be 0), CE marks and trims on the
limited ports; every byte checked by comparing each received file with the data
generated for its sender.

The RoCEv2 baseline runs the same incast in the same network right after: four RC
queue pairs (``mrc-send --transport roce``, docs/transport.md) from the same senders
with the same bytes into the same limited port, each on the one EV (plane) its
4-tuple hashes onto (source ports drawn at random with a fixed seed), each starting
at the receiver's whole capacity (``port_rate x planes`` packets/s: what one sender
alone could take) with DCQCN cutting its rate on the CNPs the receiver sends for CE
marks. Its packets are in DSCP 26, a class the fabric marks and drops but never
trims. Reported as they are: per-QP goodput and Jain's index, CNPs, go-back-N,
drops and marks on the limited ports, the deepest queue.
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from controller.counters import delta
from endpoints.wire import UDP_PORT_MRC
from experiments import common as C
from experiments import roce as R
from experiments.start_together import Barrier
from topologies.transfer import listening
from experiments.trimming import shape, shaped_leaves
from fabric.entries import ECN_THRESHOLD_HOST
from cli_common.options import finite

# The timers (docs/experiments.md, "The transport's timers"): the transport's own on
# the embedded target (a NACK of a packet only queued is taken back when it arrives,
# docs/transport.md). BMv2: the limited queue delays packets by up to 32 / PPS seconds
# (160 ms at 200 packets/s): holes are NACKed, and timeouts fire, only after 0.3 s.
NACK_DELAY: float | None = None
RTO_MIN: float | None = None
BMV2_TIMERS = {"nack_delay": 0.3, "rto_min": 0.3}
# The network's unloaded RTT through the Python switches (docs/performance.md, "The
# fabric's one-way delay"): the senders' base RTT for the delay signal (NSCC's
# configured base RTT). Measured instead, it is the smallest RTT sample, which here
# already includes a queue (4 senders x the floor of 2 packets never leave the port
# idle), and a sender then reads a queued RTT as "not delayed" and grows its window by
# half again where it should add one packet.
BASE_RTT = 0.002
STARTUP = 1.0  # seconds after the senders start: the start-up, before the bound is checked
SENDERS = ("h1", "h2", "h3", "h5")  # three from the other leaf, one from the receiver's
DST = "h4"
ROCE_SEED = "incast-roce"  # the QPs' source ports: drawn at random, the same in every run


def jain(values: list[float]) -> float:
    """Jain's fairness index: 1 when all are equal, 1/n when one has everything."""
    return sum(values) ** 2 / (len(values) * sum(v * v for v in values)) if any(values) else 0.0


def margin(senders: int) -> int:
    """Packets the queue may pass the marking threshold by: each sender's window ends
    at most 2 round trips with an increase (1 packet each: the fair increase, the RTT
    being above the base RTT's target) between the queue passing the threshold and the
    round trip whose ACKs carry the marks."""
    return senders * 2 * 1


def _arguments(fn: Any, senders: list[str], roce_pps: float | None,
               timers: tuple[float | None, float | None]) -> tuple[list[str], list[str], list[list[str]]]:
    """mrc-send's and mrc-recv's arguments, and each sender's own: MRC-lite's (its
    first windows together no more than the marking threshold of each plane's queue:
    they leave before any feedback), or the baseline's QPs at ``roce_pps``."""
    if roce_pps is not None:
        ports = R.random_ports(len(senders), ROCE_SEED)
        return R.send_args(roce_pps), list(R.TRANSPORT), [["--source-port", str(p)] for p in ports]
    first = max(2, ECN_THRESHOLD_HOST * fn.topo.planes // len(senders))
    send, recv = C.timer_args(*timers)
    return ([*send, "--initial-window", str(first), "--cc-base-rtt", str(BASE_RTT)], recv, [[] for _ in senders])


def incast(fn: Any, workdir: Path, senders: list[str], dst: str, nbytes: int, roce_pps: float | None = None,
           timers: tuple[float | None, float | None] = (NACK_DELAY, RTO_MIN)) -> dict[str, Any]:
    """The incast of MRC-lite (``timers``: its NACK delay and RTO floor, None: the
    transport's), or (``roce_pps``: their line rate) of the baseline's QPs."""
    workdir.mkdir(parents=True, exist_ok=True)
    inputs = {s: random.Random(f"incast-{s}").randbytes(nbytes) for s in senders}
    for s, data in inputs.items():
        (workdir / f"in-{s}").write_bytes(data)
    outfile = workdir / "received"
    leaves, port = shaped_leaves(fn, dst)
    before = C.read_counters(fn)
    send, recv, own = _arguments(fn, senders, roce_pps, timers)
    first = max(2, ECN_THRESHOLD_HOST * fn.topo.planes // len(senders))
    barrier = Barrier(workdir / "barrier", len(senders))
    tr = C.Transfer(fn, senders[0], dst, nbytes, workdir, send,
                    [*recv, "--out", str(outfile), "--bytes", str(nbytes)],
                    count=len(senders), launcher=barrier.launcher())
    try:
        tr.start_receiver()
        for s, extra in zip(senders, own, strict=True):
            tr.start_sender(s, ["--in", str(workdir / f"in-{s}"), *extra])
        C.reset_queue_depths(fn, leaves, port)
        barrier.release(listening(fn, [dst], UDP_PORT_MRC))
        time.sleep(STARTUP)
        startup_depth = C.max_queue_depths(fn, leaves, port)
        C.reset_queue_depths(fn, leaves, port)
        res = R.wait(tr)
    finally:
        tr.kill()
    depth = C.max_queue_depths(fn, leaves, port)
    after = C.read_counters(fn)
    d = delta(after, before)
    received = [outfile] + [outfile.with_name(f"{outfile.name}.{k}") for k in range(2, len(senders) + 1)]
    got = sorted(p.read_bytes() for p in received if p.exists())
    files_match = got == sorted(inputs.values())
    goodputs = {s: r.get("goodput_bps") or 0.0 for s, r in zip(senders, res.send_reports, strict=True)}
    starts = [r["started_at_unix"] for r in res.send_reports if "started_at_unix" in r]
    retx = {k: sum((r.get("retransmissions") or {}).get(k, 0) for r in res.send_reports)
            for k in ("total", "timeout", "nack", "trim_nack")}

    def port_count(counts: dict[str, Any], name: str) -> int:
        return sum(counts.get(leaf, {}).get(name, {}).get(port, (0, 0))[0] for leaf in leaves)

    out = {"ok": res.ok, "received_files_match": files_match, "summaries": [res.summary()],
            "initial_window": first,
            "goodput_bps": goodputs, "jain": jain(list(goodputs.values())),
            "completion_s": {s: r.get("completion_time_s") for s, r in zip(senders, res.send_reports, strict=True)},
            "retransmissions": retx,
            "evs_retired": sum(r.get("evs_retired", 0) for r in res.send_reports),
            "ce_marked": port_count(d, "FabricEgress.ecn_marked"),
            "trimmed": port_count(d, "FabricEgress.trimmed"),
            "sent_through_port": port_count(d, "FabricEgress.tx_port"),
            "max_queue_startup": startup_depth, "max_queue_after_startup": depth,
            "windows": {s: r.get("window") for s, r in zip(senders, res.send_reports, strict=True)},
            "start_skew_s": max(starts) - min(starts) if starts else None,
            "delivered_series": {s: r.get("delivered_series", []) for s, r in zip(senders, res.send_reports, strict=True)}}
    if roce_pps is not None:
        qps = dict(zip(senders, map(R.brief, R.qps(res)), strict=False))
        # what the senders sent and the limited port did not: lost in a full queue
        sent = sum(q["packets_sent"] or 0 for q in qps.values())
        out.update(line_rate_pps=roce_pps, qps=qps, packets_sent=sent,
                   rate_series={s: r.get("rate_series", []) for s, r in zip(senders, res.send_reports, strict=False)},
                   not_through_port=sent - out["sent_through_port"])
    return out


def run(fn: Any, workdir: Path, *, nbytes: int, port_rate: float, senders: tuple[str, ...] = SENDERS,
        dst: str = DST, nack_delay: float | None = NACK_DELAY, rto_min: float | None = RTO_MIN) -> dict[str, Any]:
    """Shape the receiver's port, run the incast; put the port back whatever happens."""
    out: dict[str, Any] = {"bytes_per_sender": nbytes, "port_rate_pps": port_rate, "planes": fn.topo.planes,
                           "senders": list(senders), "dst": dst, "ecn_threshold": ECN_THRESHOLD_HOST,
                           "trim_threshold": fn.topo.trim_threshold, "startup_s": STARTUP,
                           "queue_bound": ECN_THRESHOLD_HOST + margin(len(senders))}
    try:
        shape(fn, dst, port_rate)
        out.update(incast(fn, workdir, list(senders), dst, nbytes, timers=(nack_delay, rto_min)))
        out["roce"] = incast(fn, workdir / "roce", list(senders), dst, nbytes, port_rate * fn.topo.planes)
    finally:
        shape(fn, dst, None)
    return out


def acceptable(d: dict[str, Any]) -> bool:
    """MRC-lite's incast verified, fair, without timeouts or trims, its queue within the
    bound after the start-up; every QP of the baseline reported (whatever its figures)."""
    return bool(d["ok"] and d["received_files_match"] and d["retransmissions"]["timeout"] == 0 and d["jain"] >= 0.9
                and d["ce_marked"] > 0 and d["trimmed"] == 0
                and max(d["max_queue_after_startup"].values()) <= d["queue_bound"]
                and len(d["roce"]["qps"]) == len(d["senders"])
                and not any(R.problems(q) for q in d["roce"]["qps"].values()))


def figures(d: dict[str, Any]) -> list[str]:
    x = d["retransmissions"]
    return [f"incast: {', '.join(d['senders'])} -> {d['dst']}, {d['bytes_per_sender']} bytes each, unpaced; "
            f"receiver's leaf port limited to {d['port_rate_pps']:g} packets/s in each of {d['planes']} planes, "
            f"CE above {d['ecn_threshold']}, trim above {d['trim_threshold']} packets, queue bound {d['queue_bound']}",
            f"  verified={d['ok']}, files match={d['received_files_match']}, goodputs (Mb/s) "
            + ", ".join(f"{s} {C.mbps(v):.2f}" for s, v in d["goodput_bps"].items())
            + f", Jain {d['jain']:.3f}",
            f"  retransmissions {x['total']} (timeout {x['timeout']}, NACK {x['nack']}, trim NACK {x['trim_nack']}), "
            f"EVs retired {d['evs_retired']}, CE marked {d['ce_marked']}, trimmed {d['trimmed']}",
            f"  deepest queue (max_qdepth): first {d['startup_s']:g} s "
            + ", ".join(f"{k} {v}" for k, v in d["max_queue_startup"].items())
            + "; after it " + ", ".join(f"{k} {v}" for k, v in d["max_queue_after_startup"].items()),
            *roce_figures(d["roce"])]


def roce_figures(r: dict[str, Any]) -> list[str]:
    lines = [f"  RoCEv2 QPs (DCQCN from {r['line_rate_pps']:g} packets/s): verified={r['ok']}, goodputs (Mb/s) "
             + ", ".join(f"{s} {C.mbps(v):.2f}" for s, v in r["goodput_bps"].items()) + f", Jain {r['jain']:.3f}; "
             f"CE marked {r['ce_marked']}, trimmed {r['trimmed']}, {r['not_through_port']} of {r['packets_sent']} "
             "packets sent not through the limited port (dropped on the way); deepest queue after the start-up "
             + ", ".join(f"{k} {v}" for k, v in r["max_queue_after_startup"].items())]
    for s, q in r["qps"].items():
        lines.append(f"    {s}: EV {q['ev']}, {q['cnps_received']} CNPs, rate at the end "
                     f"{(q['rate_bps'] or {}).get('final', 0) / 1e6:.2f} Mb/s (lowest "
                     f"{(q['rate_bps'] or {}).get('min', 0) / 1e6:.2f}); {R.outcome(q)}")
    return lines


def plot(d: dict[str, Any]) -> Any:
    plt = C.pyplot()
    r = d["roce"]
    fig, (a, b, c) = plt.subplots(1, 3, figsize=(16, 4.2))
    for (s, series), color in zip(d["delivered_series"].items(), COLORS, strict=False):
        a.plot([t for t, _ in series], [v / 1e6 for _, v in series], color=color, label=f"{s} MRC-lite")
    for (s, series), color in zip(r["delivered_series"].items(), COLORS, strict=False):
        a.plot([t for t, _ in series], [v / 1e6 for _, v in series], color=color, linestyle="--",
               label=f"{s} RoCEv2 (EV {r['qps'][s]['ev']})")
    a.set_xlabel("seconds after the sender started")
    a.set_ylabel("MB acknowledged")
    a.set_title(f"incast into {d['dst']}")
    a.legend(fontsize=7)
    names = list(d["goodput_bps"])
    xs = range(len(names))
    b.bar([x - 0.2 for x in xs], [C.mbps(d["goodput_bps"][s]) for s in names], 0.4, color="tab:blue",
          label=f"MRC-lite, Jain {d['jain']:.3f}")
    b.bar([x + 0.2 for x in xs], [C.mbps(r["goodput_bps"][s]) for s in names], 0.4, color="tab:red",
          label=f"RoCEv2 + DCQCN, Jain {r['jain']:.3f}")
    b.set_xticks(list(xs), names)
    b.set_ylabel("goodput, Mb/s")
    b.legend(fontsize=7)
    deepest, roce_deepest = max(d["max_queue_after_startup"].values()), max(r["max_queue_after_startup"].values())
    b.set_title(f"deepest queue after the start-up: MRC {deepest}, RoCE {roce_deepest} (MRC bound "
                f"{d['queue_bound']})", fontsize=9)
    for (s, q), color in zip(r["qps"].items(), COLORS, strict=False):
        series = r["rate_series"].get(s, [])
        c.plot([t for t, _ in series], [v / 1e6 for _, v in series], color=color, label=f"{s}: {q['cnps_received']} CNPs")
    c.set_xlabel("seconds after the sender started")
    c.set_ylabel("DCQCN rate RC, Mb/s")
    c.set_title("the RoCEv2 QPs' rates (a dip per CNP)", fontsize=9)
    c.legend(fontsize=7)
    fig.tight_layout()
    return fig


COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:purple")


# On BMv2: one plane (the limited port the only queue; 10 switches), 4 senders x 150
# packets into a port drained at 200 packets/s.
TIMERS = {"nack_delay": NACK_DELAY, "rto_min": RTO_MIN}
DEFAULTS = C.Defaults(embedded={"nbytes": 1_000_000, "port_rate": 500.0, **TIMERS},
                      bmv2={"nbytes": 150_000, "port_rate": 200.0, **BMV2_TIMERS},
                      shape={"hosts_per_leaf": 3}, bmv2_shape={"planes": 1, "hosts_per_leaf": 3})
EXPERIMENT = C.Experiment("incast", figures, plot, acceptable, DEFAULTS)
app = C.app(__doc__.split("\n\n")[0])


@app.command()
def cli(
        nbytes: Annotated[Optional[int], C.bytes_option(DEFAULTS, "bytes per sender")] = None,
        port_rate: Annotated[Optional[float], typer.Option(
            "--port-rate", min=1, callback=finite, help=DEFAULTS.help("port_rate", "the receiver's leaf port, packets/s per plane"))]
        = None,
        nack_delay: Annotated[Optional[float], C.nack_delay_option(DEFAULTS)] = None,
        rto_min: Annotated[Optional[float], C.rto_min_option(DEFAULTS)] = None,
        out_dir: C.OutDirOpt = C.RESULTS, prefix: C.PrefixOpt = None, target: C.TargetOpt = "embedded",
        verbose: C.VerboseOpt = False) -> int:
    return C.main(EXPERIMENT, C.Options(out_dir, prefix, target, verbose), run,
                  {"nbytes": nbytes, "port_rate": port_rate, "nack_delay": nack_delay, "rto_min": rto_min})


def main(argv: list[str] | None = None) -> int:
    return C.command(app, "experiments.incast", argv, DEFAULTS)


if __name__ == "__main__":
    raise SystemExit(main())
