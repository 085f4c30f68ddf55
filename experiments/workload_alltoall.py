"""Workload 2, all-to-all on a fabric with fewer spine links than flows: MRC-lite
spraying against the per-flow hashed baseline.

Why: an all-to-all starts every host's transfer to every other at once; with one
path per flow (ECMP's hashing) several flows land on one spine link while others
idle, and the job waits for the most loaded link. Here 8 hosts (4 per leaf) on 2
planes x 4 spines: 16 flows cross from each leaf to the other over its 8 uplinks,
each uplink limited with ``p4target run --queue-rate`` so that the links, not the
CPU, are the bottleneck. The job runs K iterations on each transport (MRC-lite
sprayed over every EV; the per-flow baseline: one EV and a UDP source port of its
own per flow, hashed by the NIC onto one (plane, spine) member). Measured: each
iteration's time and the job's, every byte verified, the packets each fabric link
carried.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from experiments import common as C
from experiments.workload_runs import run_lines, run_report, times, verdict
from cli_common.options import finite
from workloads.collectives import alltoall
from workloads.degrade import limit_uplinks
from workloads.plots import cdf_axes, links_axes
from workloads.runner import JobSpec
from workloads.transports import transport

HOSTS = ("h1", "h5", "h2", "h6", "h3", "h7", "h4", "h8")
TRANSPORTS = (("mrc", "MRC-lite"), ("perflow", "per-flow hashing"))
QUEUE = 64  # packets a limited uplink's queue holds
ACK_DELAY = 0.01  # answers share the limited uplinks with the data: one ACK for a few arrivals


def patience(rate: float) -> float:
    """A limited uplink's full queue delays a packet by QUEUE / rate seconds: holes are
    NACKed, and timeouts fire, only after that (as in experiments/ecmp.py)."""
    return QUEUE / rate + 0.15


def job_seconds(rep: dict[str, Any]) -> float | None:
    its = rep["iterations"]
    return sum(i["time_s"] for i in its) if its and rep["complete"] else None


def run(fn: Any, workdir: Path, *, nbytes: int, iterations: int, link_rate: float) -> dict[str, Any]:
    t = fn.topo
    out: dict[str, Any] = {"bytes": nbytes, "iterations": iterations, "link_rate_pps": link_rate,
                           "hosts": list(HOSTS), "uplinks_per_leaf": t.planes * t.spines,
                           "flows_across_per_leaf": (len(HOSTS) // 2) ** 2, "runs": {}}
    try:
        limit_uplinks(fn, link_rate)
        for name, label in TRANSPORTS:
            spec = JobSpec(alltoall(len(HOSTS), nbytes), HOSTS, transport(name), iterations, timeout=60.0,
                           rto_min=patience(link_rate), nack_delay=patience(link_rate), ack_delay=ACK_DELAY)
            rep = run_report(fn, spec, workdir / name)
            rep["job_s"] = job_seconds(rep)
            out["runs"][label] = rep
    finally:
        limit_uplinks(fn, None)
    m, f = (out["runs"][label]["job_s"] for _, label in TRANSPORTS)
    out["ratio"] = m / f if m and f else None
    return out


def acceptable(d: dict[str, Any]) -> bool:
    """Every byte verified on both, MRC-lite's job at most 0.7 x the per-flow baseline's."""
    return bool(all(r["all_verified"] and r["complete"] for r in d["runs"].values())
                and d["ratio"] is not None and d["ratio"] <= 0.7)


def figures(d: dict[str, Any]) -> list[str]:
    lines = [f"all-to-all of {d['bytes']:,} bytes per host over {len(d['hosts'])} hosts, {d['iterations']} "
             f"iterations; {d['flows_across_per_leaf']} flows cross from each leaf over its {d['uplinks_per_leaf']} "
             f"uplinks of {d['link_rate_pps']:g} packets/s"]

    def line(r: Mapping[str, Any]) -> str:
        use = r["raw"]["link_packets"]
        busiest = max(use.values()) if use else 0
        mean = sum(use.values()) / len(use) if use else 0
        return (f"job {r['job_s'] or 0:.2f} s, iteration {times(r['iteration_s'], 2)}; {verdict(r)}; busiest link "
                f"{busiest} packets = {busiest / mean if mean else 0:.2f} x the mean")

    lines += run_lines(d["runs"], line)
    lines.append(f"  MRC-lite's job / per-flow's: {d['ratio'] or 0:.2f}")
    return lines


def plot(d: dict[str, Any]) -> Any:
    plt = C.pyplot()
    fig, axes = plt.subplots(1, 1 + len(d["runs"]), figsize=(16, 4.2))
    cdf_axes(axes[0], d["runs"])
    axes[0].set_title("iteration times")
    for ax, (label, r) in zip(axes[1:], d["runs"].items(), strict=True):
        links_axes(ax, r)
        ax.set_title(f"{label}: packets per link")
    fig.tight_layout()
    return fig


_SHAPE = {"planes": 2, "spines": 4, "hosts_per_leaf": 4}
DEFAULTS = C.Defaults(embedded={"nbytes": 200_000, "iterations": 3, "link_rate": 25.0},
                      bmv2={"nbytes": 160_000, "iterations": 2, "link_rate": 100.0}, shape=_SHAPE, bmv2_shape=_SHAPE)
EXPERIMENT = C.Experiment("workload_alltoall", figures, plot, acceptable, DEFAULTS)
app = C.app(__doc__.split("\n\n")[0])


@app.command()
def cli(
        nbytes: Annotated[Optional[int], C.bytes_option(DEFAULTS, "each host's message, bytes")] = None,
        iterations: Annotated[Optional[int], typer.Option("--iterations", min=1, help=DEFAULTS.help(
            "iterations", "iterations per transport"))] = None,
        link_rate: Annotated[Optional[float], typer.Option("--link-rate", min=1, callback=finite, help=DEFAULTS.help(
            "link_rate", "each uplink, packets/s"))] = None,
        out_dir: C.OutDirOpt = C.RESULTS, prefix: C.PrefixOpt = None, target: C.TargetOpt = "embedded",
        verbose: C.VerboseOpt = False) -> int:
    return C.main(EXPERIMENT, C.Options(out_dir, prefix, target, verbose), run,
                  {"nbytes": nbytes, "iterations": iterations, "link_rate": link_rate})


def main(argv: list[str] | None = None) -> int:
    return C.command(app, "experiments.workload_alltoall", argv, DEFAULTS)


if __name__ == "__main__":
    raise SystemExit(main())
