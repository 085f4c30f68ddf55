"""Experiment 8, ECMP collisions: concurrent flows between distinct host pairs across
leaves, per-flow hashing against MRC spraying, on rate-limited fabric links.

Why: MRC's headline is that per-packet spraying removes the flow collisions of ECMP
hashing: with one path per flow, two flows hashed onto the same link share it while
other links idle, and the slowest flow sets the job's time. Here every uplink of the
source leaf (``p<P>-leaf0`` to each spine, in every plane) is restarted with
``p4target run --queue-rate PORT=PPS``, so the links, not the CPU, are the bottleneck.
Four flows, h1 -> h5, h2 -> h6, h3 -> h7, h4 -> h8, start together, unpaced (the
congestion window decides), twice. Together means within milliseconds: each sender is
held at a barrier after its start-up (experiments/start_together.py) until all four
are ready and every receiver listens; started one after the other instead, the
Python senders left up to a second apart on 2 shared cores, and the flows' completion
times then showed the machine's scheduling (the first flows had the links to
themselves). Each flow's
time runs from its own sender's start. The two runs: as plain flows (``mrc-send`` to another UDP port
from one ``--source-port`` each: not MRC for the NIC, so ``spray_mode`` hashes each flow
onto one (plane, spine) member, docs/nic.md), then as MRC-lite spraying over every
EV. Measured: each flow's completion time, every byte verified by comparing each
received file with the data generated for it, and the packets each uplink carried
(``tx_port`` counters over P4Runtime: how many links the hashed flows used).

A third run, in the same network and with the same bytes, is the RoCEv2 baseline
(``mrc-send --transport roce``, docs/transport.md): four RC queue pairs, each on the
one EV its 4-tuple hashes onto (CRC-32 modulo the EV list), their source ports drawn
at random from the dynamic range with a fixed seed, as a NIC draws a QP's (ports in
an aligned block would not collide: CRC-32 is linear). Each starts at the fair share
of the limited uplinks (``limited_uplinks x link_rate / flows`` packets/s) and DCQCN
takes it from there; its local ACK timeout is MRC-lite's minimum RTO (a full queue
delays by more than the default 0.268 s). Two QPs whose hashes pick the same (plane, spine) share that
uplink, which is the collision: the run reports each QP's EV and uplink, the QPs
that share one, and each QP's outcome (state, completion, go-back-N, CNPs) as they
are.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from controller.counters import delta
from endpoints.wire import UDP_PORT_MRC
from experiments import common as C
from experiments import roce as R
from experiments.start_together import Barrier
from topologies.transfer import listening
from fabric import plan as P
from cli_common.options import finite
from fabric.paths import paths
from topologies.fabric_net import install_tables

PAIRS = (("h1", "h5"), ("h2", "h6"), ("h3", "h7"), ("h4", "h8"))
LEAF = 0  # the source leaf, whose uplinks are limited
PLAIN_PORT = 4792  # not 4791: the NIC does not treat it as MRC
PLAIN_PORTS = (40001, 40002, 40003, 40004)  # one UDP source port per plain flow: one hash each
# A limited uplink's queue (64 packets) delays by up to 64 / PPS seconds: holes are
# NACKed, and timeouts fire, only after that.
NACK_DELAY = 0.4
RTO_MIN = 0.4
ROCE_SEED = "ecmp-roce"  # the QPs' source ports: drawn at random, the same in every run


def uplink_of(fn: Any, src: str, dst: str, ev: int | None) -> str | None:
    """The source leaf's uplink (``leaf:port``, as ``uplink_packets`` names them) the
    EV's path leaves on, or None (no such EV)."""
    for p in paths(fn.topo, fn.topo.host(src), fn.topo.host(dst)):
        if p.ev == ev and p.spine is not None:
            return f"{fn.topo.leaf_name(p.plane, LEAF)}:{P.leaf_uplink_port(fn.topo, p.spine)}"
    return None


def uplinks(fn: Any) -> dict[str, list[int]]:
    """The source leaf of every plane and its ports to the spines."""
    t = fn.topo
    return {t.leaf_name(p, LEAF): [P.leaf_uplink_port(t, s) for s in range(t.spines)] for p in range(t.planes)}


def shape(fn: Any, rate: float | None) -> None:
    """Restart the source leaves with (or without: None) a rate on every uplink and
    reconcile (a restarted switch starts empty)."""
    for name, ports in uplinks(fn).items():
        sw = fn.switch(name)
        sw.extra_args = [] if rate is None else [a for port in ports for a in ("--queue-rate", f"{port}={rate:g}")]
        sw.restart()
    rep = install_tables(fn)
    if rep.failed:
        raise RuntimeError(f"install after the restart failed: {rep.summary()}")


def _mode_args(mode: str, k: int, rate: float) -> tuple[list[str], list[str]]:
    """Flow ``k``'s extra mrc-send and mrc-recv arguments in ``mode`` (``rate``: the
    QPs' line rate, packets/s)."""
    if mode == "per_flow":
        return (["--port", str(PLAIN_PORT), "--source-port", str(PLAIN_PORTS[k]), "--ev-list", "1",
                 "--ev-min-active", "1"], ["--port", str(PLAIN_PORT)])
    if mode == "roce":  # its local ACK timeout as MRC-lite's minimum RTO: longer than a full queue's delay
        return (R.send_args(rate, source_port=R.random_ports(len(PAIRS), ROCE_SEED)[k],
                            extra=["--ack-timeout", str(RTO_MIN)]), list(R.TRANSPORT))
    return [], []


def flows(fn: Any, workdir: Path, mode: str, nbytes: int, rate: float = 0.0) -> dict[str, Any]:
    """The four flows at once, ``mode`` "per_flow", "spraying" or "roce" (QPs starting
    at ``rate`` packets/s); each between two counter reads."""
    workdir.mkdir(parents=True, exist_ok=True)
    before = C.read_counters(fn)
    transfers = []
    inputs: dict[str, bytes] = {}
    barrier = Barrier(workdir / "barrier", len(PAIRS))
    port = PLAIN_PORT if mode == "per_flow" else UDP_PORT_MRC
    try:
        for k, (src, dst) in enumerate(PAIRS):
            name = f"{src}-{dst}"
            inputs[name] = random.Random(f"ecmp-{name}").randbytes(nbytes)
            infile, outfile = workdir / f"in-{name}", workdir / f"out-{name}"
            infile.write_bytes(inputs[name])
            send = ["--rto-min", str(RTO_MIN), "--in", str(infile)]
            recv = ["--nack-delay", str(NACK_DELAY), "--out", str(outfile), "--bytes", str(nbytes)]
            more_send, more_recv = _mode_args(mode, k, rate)
            send += more_send
            recv += more_recv
            tr = C.Transfer(fn, src, dst, nbytes, workdir / name, send, recv, launcher=barrier.launcher())
            tr.start_receiver()
            transfers.append((name, tr))
        for _, tr in transfers:
            tr.start_sender()
        waited = barrier.release(listening(fn, [d for _, d in PAIRS], port))
        results = {name: R.wait(tr) for name, tr in transfers}
    finally:
        for _, tr in transfers:
            tr.kill()
    d = delta(C.read_counters(fn), before)
    per_link = {f"{leaf}:{port}": d.get(leaf, {}).get("FabricEgress.tx_port", {}).get(port, (0, 0))[0]
                for leaf, ports in uplinks(fn).items() for port in ports}
    times = {name: r.sender.get("completion_time_s") for name, r in results.items()}
    starts = [r.sender["started_at_unix"] for r in results.values() if "started_at_unix" in r.sender]
    done = [t for t in times.values() if t]
    mean = sum(done) / len(done) if done else None
    matches = {name: (workdir / f"out-{name}").exists() and (workdir / f"out-{name}").read_bytes() == inputs[name]
               for name in inputs}
    out = {"ok": all(r.ok for r in results.values()), "received_files_match": all(matches.values()),
            "summaries": [r.summary() for r in results.values()], "completion_s": times,
            "slowest_s": max(done) if done else None, "mean_s": mean,
            "slowest_over_mean": max(done) / mean if done and mean else None,
            "start_skew_s": max(starts) - min(starts) if starts else None, "barrier_wait_s": waited,
            "retransmissions": {n: r.sender.get("retransmissions") for n, r in results.items()},
            "uplink_packets": per_link,  # used: more than a tenth of one flow's packets
            "uplinks_used": sum(1 for v in per_link.values() if v > nbytes // 10_000)}
    if mode == "roce":
        out.update(roce_qps(fn, results))
    return out


def roce_qps(fn: Any, results: dict[str, Any]) -> dict[str, Any]:
    """Each QP's figures and the uplink its EV leaves the source leaf on; the QPs that
    share an uplink with another (the collisions)."""
    qps = {}
    for (src, dst), (name, r) in zip(PAIRS, results.items(), strict=True):
        q = R.brief(R.qps(r)[0])
        q["uplink"] = uplink_of(fn, src, dst, q["ev"])
        qps[name] = q
    shared = Counter(q["uplink"] for q in qps.values())
    return {"qps": qps, "colliding_qps": sorted(n for n, q in qps.items() if shared[q["uplink"]] > 1),
            "uplinks_hashed": len(shared)}


def run(fn: Any, workdir: Path, *, nbytes: int, link_rate: float) -> dict[str, Any]:
    out: dict[str, Any] = {"bytes_per_flow": nbytes, "link_rate_pps": link_rate, "pairs": [list(p) for p in PAIRS],
                           "limited_uplinks": sum(len(v) for v in uplinks(fn).values())}
    try:
        shape(fn, link_rate)
        out["per_flow"] = flows(fn, workdir / "per_flow", "per_flow", nbytes)
        out["spraying"] = flows(fn, workdir / "spraying", "spraying", nbytes)
        out["roce_line_rate_pps"] = share = out["limited_uplinks"] * link_rate / len(PAIRS)
        out["roce"] = flows(fn, workdir / "roce", "roce", nbytes, share)
    finally:
        shape(fn, None)
    return out


def acceptable(d: dict[str, Any]) -> bool:
    """Spraying verified, no slow flow and sooner than per-flow hashing; the plain
    flows verified; every QP of the baseline reported (its figures whatever they are)."""
    f, s = d["per_flow"], d["spraying"]
    return bool(f["ok"] and s["ok"] and f["received_files_match"] and s["received_files_match"]
                and s["slowest_over_mean"] <= 1.25 and s["slowest_s"] < f["slowest_s"]
                and not any(R.problems(q) for q in d["roce"]["qps"].values()))


def figures(d: dict[str, Any]) -> list[str]:
    lines = [f"ECMP collisions: {len(d['pairs'])} flows of {d['bytes_per_flow']} bytes at once "
             f"({', '.join('->'.join(p) for p in d['pairs'])}), {d['limited_uplinks']} uplinks of leaf 0 limited to "
             f"{d['link_rate_pps']:g} packets/s each"]
    for key, label, _ in MODES:
        r = d[key]
        lines.append(f"  {label:16}: verified={r['ok']}, files match={r['received_files_match']}, completion "
                     + ", ".join(f"{n} {t or 0:.2f} s" for n, t in r["completion_s"].items())
                     + f"; slowest {r['slowest_s'] or 0:.2f} s = {r['slowest_over_mean'] or 0:.2f} x the mean; "
                     f"uplinks used {r['uplinks_used']}; first packets {r['start_skew_s'] or 0:.3f} s apart")
    r = d["roce"]
    lines.append(f"  RoCEv2 QPs (starting at {d['roce_line_rate_pps']:g} packets/s): {r['uplinks_hashed']} uplinks "
                 f"hashed onto, sharing one: {', '.join(r['colliding_qps']) or 'none'}")
    for n, q in r["qps"].items():
        lines.append(f"    {n}: source port {q['source_port']}, EV {q['ev']} on {q['uplink']}; {R.outcome(q)}; "
                     f"{q['cnps_received']} CNPs")
    return lines


MODES = (("per_flow", "per-flow hashing", "grey"), ("spraying", "MRC spraying", "tab:blue"),
         ("roce", "RoCEv2 QPs (ECMP)", "tab:red"))


def plot(d: dict[str, Any]) -> Any:
    plt = C.pyplot()
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.2))
    names = list(d["per_flow"]["completion_s"])
    links = list(d["per_flow"]["uplink_packets"])
    w = 0.27
    for k, (key, label, color) in enumerate(MODES):
        r = d[key]
        a.bar([i + w * (k - 1) for i in range(len(names))], [r["completion_s"][n] or 0 for n in names], w,
              label=label, color=color)
        b.bar([i + w * (k - 1) for i in range(len(links))], [r["uplink_packets"][n] for n in links], w,
              color=color, label=label)
    for i, n in enumerate(names):  # a QP that did not complete: its bar is the time to its error
        if d["roce"]["qps"][n]["state"] != "complete":
            a.text(i + w, d["roce"]["completion_s"][n] or 0, "failed", ha="center", va="bottom", fontsize=8,
                   color="tab:red")
    a.set_xticks(range(len(names)), names)
    a.set_ylabel("completion time, s")
    a.set_title("RoCEv2 QPs hashed onto one uplink: " + (", ".join(d["roce"]["colliding_qps"]) or "none"), fontsize=9)
    a.legend()
    b.set_xticks(range(len(links)), links, rotation=45, ha="right", fontsize=7)
    b.set_ylabel("packets on the uplink")
    fig.tight_layout()
    return fig


# On BMv2: the same fabric (4 hosts per leaf for 4 flows; 24 switches), 4 flows x 200
# packets over uplinks of 100 packets/s.
_SHAPE = {"hosts_per_leaf": 4}
DEFAULTS = C.Defaults(embedded={"nbytes": 600_000, "link_rate": 250.0}, bmv2={"nbytes": 200_000, "link_rate": 100.0},
                      shape=_SHAPE, bmv2_shape=_SHAPE)
EXPERIMENT = C.Experiment("ecmp", figures, plot, acceptable, DEFAULTS)
app = C.app(__doc__.split("\n\n")[0])


@app.command()
def cli(
        nbytes: Annotated[Optional[int], C.bytes_option(DEFAULTS, "bytes per flow")] = None,
        link_rate: Annotated[Optional[float], typer.Option(
            "--link-rate", min=1, callback=finite, help=DEFAULTS.help("link_rate", "each limited uplink, packets/s"))] = None,
        out_dir: C.OutDirOpt = C.RESULTS, prefix: C.PrefixOpt = None, target: C.TargetOpt = "embedded",
        verbose: C.VerboseOpt = False) -> int:
    return C.main(EXPERIMENT, C.Options(out_dir, prefix, target, verbose), run,
                  {"nbytes": nbytes, "link_rate": link_rate})


def main(argv: list[str] | None = None) -> int:
    return C.command(app, "experiments.ecmp", argv, DEFAULTS)


if __name__ == "__main__":
    raise SystemExit(main())
