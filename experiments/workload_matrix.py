"""Workload 3, a traffic matrix in htsim's format: the flows' completion-time
slowdown on each transport.

Why: the simulations of MRC-like transports (htsim, the Ultra Ethernet and REPS
papers) are run on connection matrices; the same file runs here unchanged
(workloads/htsim.py). The matrix is the project's own (``python -m
workloads.generate mixed --nodes 8 --flows 48 --min-size 10000 --max-size 300000
--spread-us 1000000 --seed 1``): 48 flows between random pairs of 8 hosts, sizes
log-uniform from 10 kB to 300 kB, starts spread over one second. It runs on the
fabric of workload 2 (8 hosts, 2 planes x 4 spines, every uplink limited) with
MRC-lite, MRC-lite sprayed round robin and the per-flow baseline. Measured: each
flow's completion time (FCT) and its slowdown, FCT over the flow's size at the
capacity of the uplinks of its leaf (planes x spines x rate x payload; a flow within
one leaf crosses no limited link, so its slowdown may be below 1, and the flows
across the spines are summed apart), every byte verified, the packets of each fabric
link.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from experiments import common as C
from experiments.workload_alltoall import ACK_DELAY, patience
from experiments.workload_runs import run_lines, run_report, verdict
from cli_common.options import finite
from workloads import htsim
from workloads.cli import hosts_in_ring
from workloads.degrade import limit_uplinks
from workloads.plots import cdf_axes
from workloads.runner import JobSpec
from workloads.stats import summary
from workloads.transports import transport

MATRIX = C.REPO / "workloads" / "matrices" / "mixed_8n_48f.cm"
TRANSPORTS = (("mrc", "MRC-lite"), ("rr", "MRC-lite round robin"), ("perflow", "per-flow hashing"))
MTU = 1000


def run(fn: Any, workdir: Path, *, link_rate: float, matrix: Path = MATRIX) -> dict[str, Any]:
    t = fn.topo
    sched = htsim.read(matrix)
    hosts = tuple(hosts_in_ring(t, None, sched.nodes))
    capacity = t.planes * t.spines * link_rate * MTU * 8
    out: dict[str, Any] = {"matrix": str(matrix.relative_to(C.REPO)) if matrix.is_relative_to(C.REPO) else str(matrix),
                           "flows": len(sched.flows), "nodes": sched.nodes, "bytes": sched.total_bytes(),
                           "hosts": list(hosts), "link_rate_pps": link_rate, "capacity_bps": capacity, "runs": {},
                           "leaf_of": {h.name: h.leaf for h in t.hosts}}
    try:
        limit_uplinks(fn, link_rate)
        for name, label in TRANSPORTS:
            spec = JobSpec(sched, hosts, transport(name), 1, timeout=60.0, rto_min=patience(link_rate),
                           nack_delay=patience(link_rate), ack_delay=ACK_DELAY)
            rep = run_report(fn, spec, workdir / name, capacity)
            rep["slowdown_across"] = summary([f["slowdown"] for f in rep["flows"] if f["slowdown"] is not None
                                              and out["leaf_of"][f["src"]] != out["leaf_of"][f["dst"]]])
            out["runs"][label] = rep
    finally:
        limit_uplinks(fn, None)
    return out


def acceptable(d: dict[str, Any]) -> bool:
    """Every flow of every run arrived with its bytes verified (the slowdowns are reported)."""
    return all(r["complete"] and r["all_verified"] for r in d["runs"].values())


def figures(d: dict[str, Any]) -> list[str]:
    lines = [f"matrix {d['matrix']}: {d['flows']} flows, {d['bytes']:,} bytes over {d['nodes']} hosts; uplinks of "
             f"{d['link_rate_pps']:g} packets/s, a leaf's capacity {d['capacity_bps'] / 1e6:.1f} Mb/s"]

    def line(r: Mapping[str, Any]) -> str:
        s, f, x = r["slowdown"], r["fct_s"], r["slowdown_across"]
        return (f"slowdown p50 {s.get('p50', 0):.1f}, p99 {s.get('p99', 0):.1f}, max {s.get('max', 0):.1f} (the "
                f"{x['n']} flows across the spines: p50 {x.get('p50', 0):.1f}, p99 {x.get('p99', 0):.1f}); FCT p50 "
                f"{f.get('p50', 0):.2f} s, p99 {f.get('p99', 0):.2f} s; job {r['iteration_s'].get('max', 0):.2f} s; "
                f"{verdict(r)}")

    lines += run_lines(d["runs"], line)
    return lines


def plot(d: dict[str, Any]) -> Any:
    plt = C.pyplot()
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.2))
    cdf_axes(a, d["runs"], key="slowdown")
    a.set_xscale("log")
    a.set_title("FCT slowdown per flow")
    for i, (label, r) in enumerate(d["runs"].items()):
        sizes = [f["bytes"] for f in r["flows"] if f["slowdown"] is not None]
        b.scatter(sizes, [f["slowdown"] for f in r["flows"] if f["slowdown"] is not None], s=10, label=label,
                  color=f"C{i}")
    b.set_xscale("log")
    b.set_yscale("log")
    b.set_xlabel("flow size, bytes")
    b.set_ylabel("slowdown")
    b.legend(fontsize=8)
    fig.tight_layout()
    return fig


_SHAPE = {"planes": 2, "spines": 4, "hosts_per_leaf": 4}
DEFAULTS = C.Defaults(embedded={"link_rate": 100.0}, bmv2={"link_rate": 100.0}, shape=_SHAPE, bmv2_shape=_SHAPE)
EXPERIMENT = C.Experiment("workload_matrix", figures, plot, acceptable, DEFAULTS)
app = C.app(__doc__.split("\n\n")[0])


@app.command()
def cli(
        link_rate: Annotated[Optional[float], typer.Option("--link-rate", min=1, callback=finite, help=DEFAULTS.help(
            "link_rate", "each uplink, packets/s"))] = None,
        matrix: Annotated[Path, typer.Option("--matrix", help="the connection matrix (htsim's format)")] = MATRIX,
        out_dir: C.OutDirOpt = C.RESULTS, prefix: C.PrefixOpt = None, target: C.TargetOpt = "embedded",
        verbose: C.VerboseOpt = False) -> int:
    try:
        htsim.read(matrix)
    except htsim.HtsimError as exc:
        raise typer.BadParameter(str(exc), param_hint="--matrix") from None
    return C.main(EXPERIMENT, C.Options(out_dir, prefix, target, verbose), run,
                  {"link_rate": link_rate, "matrix": matrix})


def main(argv: list[str] | None = None) -> int:
    return C.command(app, "experiments.workload_matrix", argv, DEFAULTS)


if __name__ == "__main__":
    raise SystemExit(main())
