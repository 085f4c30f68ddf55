"""Experiment 3, trimming: incast of 3 senders into 1 receiver through a rate-limited
leaf port, with trimming on and with trimming off, in one run.

Why a rate-limited port: the embedded target's ports send as fast as the process can,
so no queue ever builds by itself. The receiver's leaf in every plane is restarted with
``p4target run --queue-rate PORT=PPS`` on the port to the receiver's NIC: that port
drains at PPS and its egress queue (64 packets) fills behind it. With trimming on
(the controller's ``trim_config`` entries, threshold 32 packets) packets that find the
queue past the threshold are cut to their headers, marked and sent at high priority;
the receiver NACKs each at once (trim NACK) and the sender resends it at once. The
senders start with a first window of 128 packets, so that the queues overflow before
congestion control has any feedback. With
trimming off (the same fabric reconciled without ``trim_config`` entries: the
topology's ``trim_threshold`` None) the full queue drops, and the senders learn of it
only from holes NACKed after ``--nack-delay`` or from timeouts. Measured: completion
time of the incast (the slowest sender), retransmissions by cause, packets trimmed
(the leaves' ``FabricEgress.trimmed`` counters) and dropped.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from controller.counters import delta
from experiments import common as C
from cli_common.options import finite
from topologies.fabric_net import install_tables


def shaped_leaves(fn: Any, dst: str) -> tuple[list[str], int]:
    """The receiver's leaf in every plane, and its port to the receiver's NIC."""
    h = fn.topo.host(dst)
    return [f"p{p}-leaf{h.leaf}" for p in range(fn.topo.planes)], h.port


def shape(fn: Any, dst: str, rate: float | None) -> None:
    """Restart the receiver's leaves with (or without: None) a rate on the port to it and
    reconcile them (a restarted switch starts empty)."""
    names, port = shaped_leaves(fn, dst)
    for name in names:
        sw = fn.switch(name)
        sw.extra_args = [] if rate is None else ["--queue-rate", f"{port}={rate:g}"]
        sw.restart()
    rep = install_tables(fn)
    if rep.failed:
        raise RuntimeError(f"install after the restart failed: {rep.summary()}")


def set_trimming(fn: Any, on: bool, threshold: int | None) -> int:
    """Reconcile every switch with (``on``) or without ``trim_config`` entries; entries written."""
    fn.topo = dataclasses.replace(fn.topo, trim_threshold=threshold if on else None)
    rep = install_tables(fn)
    if rep.failed:
        raise RuntimeError(f"install failed: {rep.summary()}")
    return rep.writes


# The timers (docs/experiments.md, "The transport's timers"). The shaped queue delays
# packets by up to 64 / PPS seconds (128 ms at 500 packets/s), more on one plane than
# another. Embedded target: a hole is NACKed after 150 ms, the RTO floor the
# transport's: of the timers measured, the one whose runs retired the fewest EVs whose
# paths work (the NACKs of packets dropped at a full queue). BMv2 (320 ms at 200
# packets/s): holes are NACKed, and timeouts fire, only after 0.3 s.
NACK_DELAY = 0.15
RTO_MIN = None
BMV2_TIMERS = {"nack_delay": 0.3, "rto_min": 0.3}
# The senders' congestion control keeps the queues under the marking threshold once
# it has feedback (experiments/incast.py shows that); the first windows leave before
# any: 3 x 128 packets over 4 planes' queues is 96 each, past the trim threshold.
FIRST_WINDOW = 128
# A trim NACK can arrive after its sender's verdict: a timeout resent the packet, and
# the ACK and the verdict came back on other paths first. The senders keep reading this
# long after the verdict, so that every trim NACK sent is counted where it arrives.
LINGER = 1.0


def incast(fn: Any, workdir: Path, senders: list[str], dst: str, nbytes: int, rate: float,
           timers: tuple[float | None, float | None] = (NACK_DELAY, RTO_MIN)) -> dict[str, Any]:
    """``timers``: the NACK delay and the RTO floor (None: the transport's)."""
    before = C.read_counters(fn)
    send, recv = C.timer_args(*timers)
    tr = C.Transfer(fn, senders[0], dst, nbytes, workdir, ["--rate", str(rate), *send,
                                                          "--initial-window", str(FIRST_WINDOW),
                                                          "--linger", str(LINGER)],
                    recv, count=len(senders))
    try:
        tr.start_receiver()
        for s in senders:
            tr.start_sender(s)
        res = tr.wait()
    finally:
        tr.kill()
    d = delta(C.read_counters(fn), before)
    leaves, port = shaped_leaves(fn, dst)
    trimmed = sum(d.get(leaf, {}).get("FabricEgress.trimmed", {}).get(port, (0, 0))[0] for leaf in leaves)
    drops = sum(pk for leaf in leaves for k in ("FabricIngress.drops", "FabricEgress.drops")
                for pk, _ in d.get(leaf, {}).get(k, {}).values())
    retx = {k: sum((r.get("retransmissions") or {}).get(k, 0) for r in res.send_reports)
            for k in ("total", "timeout", "nack", "trim_nack")}
    return {"ok": res.ok, "summaries": [res.summary()],
            "completion_time_s": max((r.get("completion_time_s") or 0 for r in res.send_reports), default=None),
            "per_sender_completion_s": {s: r.get("completion_time_s") for s, r in zip(senders, res.send_reports, strict=True)},
            "retransmissions": retx, "trimmed": trimmed, "p4_drops": drops,  # (queue overflows are not P4 drops)
            "evs_retired": sum(r.get("evs_retired", 0) for r in res.send_reports),
            "trimmed_at_receiver": _recv_count(res, "trimmed"),
            "trimmed_duplicates_at_receiver": _recv_count(res, "trimmed_duplicates"),
            "trim_nacks_sent": _recv_count(res, "trim_nacks"),
            "trim_nacks_received": _send_count(res, "trim_nacks_received"),
            "trim_nacks_late": _send_count(res, "trim_nacks_late"),
            "delivered_series": {s: r.get("delivered_series", []) for s, r in zip(senders, res.send_reports, strict=True)}}


def _send_count(res: Any, name: str) -> int:
    return sum((r.get("control") or {}).get(name, 0) for r in res.send_reports)


def _recv_count(res: Any, name: str) -> int:
    return sum(c.get("counts", {}).get(name, 0) for c in res.recv_report.get("connections", []))


def run(fn: Any, workdir: Path, *, nbytes: int, rate: float, port_rate: float,
        senders: tuple[str, ...] = ("h1", "h2", "h4"), dst: str = "h3", nack_delay: float | None = NACK_DELAY,
        rto_min: float | None = RTO_MIN) -> dict[str, Any]:
    """Shape the receiver's port, incast with trimming on, then off; unshape and put the
    fabric's entries back whatever happens."""
    threshold = fn.topo.trim_threshold
    out: dict[str, Any] = {"bytes_per_sender": nbytes, "rate_pps": rate, "port_rate_pps": port_rate,
                           "planes": fn.topo.planes, "senders": list(senders), "dst": dst,
                           "trim_threshold": threshold}
    try:
        shape(fn, dst, port_rate)
        out["trim_on"] = incast(fn, workdir / "on", list(senders), dst, nbytes, rate,
                                (nack_delay, rto_min))
        out["trim_off_entries_written"] = set_trimming(fn, False, threshold)
        out["trim_off"] = incast(fn, workdir / "off", list(senders), dst, nbytes, rate,
                                 (nack_delay, rto_min))
    finally:
        fn.topo = dataclasses.replace(fn.topo, trim_threshold=threshold)
        shape(fn, dst, None)
    return out


def figures(d: dict[str, Any]) -> list[str]:
    lines = [f"trimming: incast {', '.join(d['senders'])} -> {d['dst']}, {d['bytes_per_sender']} bytes each at "
             f"{d['rate_pps']:g} packets/s, receiver's leaf port limited to {d['port_rate_pps']:g} packets/s "
             f"in each of {d['planes']} planes"]
    for key, label in (("trim_on", "trimming on "), ("trim_off", "trimming off")):
        r = d[key]
        x = r["retransmissions"]
        lines.append(f"  {label}: verified={r['ok']}, completion {r['completion_time_s'] or 0:.2f} s, "
                     f"retransmissions {x['total']} (trim NACK {x['trim_nack']}, NACK {x['nack']}, "
                     f"timeout {x['timeout']}), trimmed {r['trimmed']}, "
                     f"EVs retired {r['evs_retired']}")
    return lines


def plot(d: dict[str, Any]) -> Any:
    plt = C.pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    for key, style in (("trim_on", "-"), ("trim_off", "--")):
        for s, series in d[key]["delivered_series"].items():
            axes[0].plot([t for t, _ in series], [b / 1e6 for _, b in series], style,
                         label=f"{s}, trimming {key[5:]}")
    axes[0].set_xlabel("seconds after the sender started")
    axes[0].set_ylabel("MB acknowledged")
    axes[0].set_title("incast progress per sender")
    axes[0].legend(fontsize=8)
    causes = ["trim_nack", "nack", "timeout"]
    xs = range(len(causes))
    for i, key in enumerate(("trim_on", "trim_off")):
        axes[1].bar([x + (i - 0.5) * 0.4 for x in xs], [d[key]["retransmissions"][c] for c in causes], 0.4,
                    label=f"trimming {key[5:]}: completion {d[key]['completion_time_s'] or 0:.2f} s")
    axes[1].set_xticks(list(xs), ["trim NACK", "loss NACK", "timeout"])
    axes[1].set_title("retransmissions by cause")
    axes[1].legend(fontsize=8)
    fig.suptitle(f"Incast 3 -> 1 through a leaf port limited to {d['port_rate_pps']:g} packets/s per plane")
    return fig


def acceptable(d: dict[str, Any]) -> bool:
    """Both incasts verified."""
    return bool(d["trim_on"]["ok"] and d["trim_off"]["ok"])


# On BMv2: 3 x 400 packets/s into 2 planes' ports of 200 each; every queue still grows
# past the trim threshold (32) within a tenth of a second.
TIMERS = {"nack_delay": NACK_DELAY, "rto_min": RTO_MIN}
DEFAULTS = C.Defaults(embedded={"nbytes": 1_000_000, "rate": 1000.0, "port_rate": 500.0, **TIMERS},
                      bmv2={"nbytes": 150_000, "rate": 400.0, "port_rate": 200.0, **BMV2_TIMERS})
EXPERIMENT = C.Experiment("trimming", figures, plot, acceptable, DEFAULTS)
app = C.app(__doc__.split("\n\n")[0])


@app.command()
def cli(
        nbytes: Annotated[Optional[int], C.bytes_option(DEFAULTS, "bytes per sender")] = None,
        rate: Annotated[Optional[float], typer.Option(
            "--rate", min=1, callback=finite, help=DEFAULTS.help("rate", "each sender's pacing, packets/s"))] = None,
        port_rate: Annotated[Optional[float], typer.Option(
            "--port-rate", min=1, callback=finite, help=DEFAULTS.help("port_rate", "the receiver's leaf port, packets/s per plane"))]
        = None,
        nack_delay: Annotated[Optional[float], C.nack_delay_option(DEFAULTS)] = None,
        rto_min: Annotated[Optional[float], C.rto_min_option(DEFAULTS)] = None,
        out_dir: C.OutDirOpt = C.RESULTS, prefix: C.PrefixOpt = None, target: C.TargetOpt = "embedded",
        verbose: C.VerboseOpt = False) -> int:
    return C.main(EXPERIMENT, C.Options(out_dir, prefix, target, verbose), run,
                  {"nbytes": nbytes, "rate": rate, "port_rate": port_rate, "nack_delay": nack_delay, "rto_min": rto_min})


def main(argv: list[str] | None = None) -> int:
    return C.command(app, "experiments.trimming", argv, DEFAULTS)


if __name__ == "__main__":
    raise SystemExit(main())
