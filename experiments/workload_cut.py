"""Workload 1, a ring all-reduce with a spine cable cut mid-job: MRC-lite against the
RoCEv2 baseline.

Why: a training job waits for its slowest transfer every iteration, so what a
failure costs is the iteration time around it, not one flow's goodput. The job is a
ring all-reduce over the fabric's four hosts in a ring that crosses the spines at
every hop (h1 h3 h2 h4: every flow has paths through the cut cable), K iterations,
run four times in turn on one fabric, twice over (the machine's load drifts; each kind of
run gets its share of every period): MRC-lite clean, MRC-lite with the cable
``p0-leaf0:p0-spine0`` cut part-way and restored later, and the same two on the RoCEv2
RC baseline (each flow one queue pair on the one EV its 4-tuple hashes onto, as ECMP
does; go-back-N, DCQCN; a QP whose retries run out goes to the error state and the
job stops there, as a training job does). Measured per run: each iteration's time
(p50, p99, max), the flows' completion times, every byte verified, the flows that
failed and why, the EVs retired whose path does not cross the cut cable (healthy EVs
retired), the packets on each fabric link.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from experiments import common as C
from experiments.workload_runs import run_lines, run_report, times, verdict
from cli_common.options import finite
from workloads.collectives import ring_allreduce
from workloads.plots import cdf_axes, timeline_axes
from workloads.runner import Cut, JobSpec
from workloads.stats import summary
from workloads.transports import transport

LINK = "p0-leaf0:p0-spine0"
RING = ("h1", "h3", "h2", "h4")
RUNS = (("mrc", False), ("mrc", True), ("roce", False), ("roce", True))
NAMES = {"mrc": "MRC-lite", "roce": "RoCE"}


def label(name: str, cut: bool) -> str:
    return f"{NAMES[name]} {'cut' if cut else 'clean'}"


def pooled(reps: list[dict[str, Any]]) -> dict[str, Any]:
    """The rounds of one kind of run as one: their iterations and flows together."""
    its = [it for r in reps for it in r["iterations"]]
    flows = [f for r in reps for f in r.pop("flows")]  # each round's raw record keeps them
    return {"iterations": its, "iteration_s": summary([it["time_s"] for it in its]),
            "fct_s": summary([f["fct_s"] for f in flows if f["fct_s"] is not None]),
            "iterations_done": len(its), "iterations_asked": sum(r["iterations_asked"] for r in reps),
            "complete": all(r["complete"] for r in reps), "all_verified": all(r["all_verified"] for r in reps),
            "failed": [f for f in flows if f["error"]],
            "healthy_evs_retired": sum(r["healthy_evs_retired"] or 0 for r in reps),
            "healthy_taken_back": sum(1 for r in reps for h in r.get("healthy_retirements", [])
                                      if h["taken_back_s"] is not None),
            "retransmissions": sum(f["retransmissions"] or 0 for f in flows),
            "resent_on_timeout": sum(f["resent_by"]["timeout"] for f in flows if "resent_by" in f)
            if any("resent_by" in f for f in flows) else None, "rounds": reps}


def cut_iteration(rep: dict[str, Any]) -> dict[str, Any] | None:
    """The iteration of a run's report that was running when its cable went down (the
    cut log's time), or None (no cut, or it fell between iterations or after the last)."""
    downs = [c["t"] for c in (rep.get("cut") or {}).get("log", []) if c["down"]]
    if not downs:
        return None
    return next((it for it in rep["iterations"] if it["start_s"] <= downs[0] < it["start_s"] + it["time_s"]), None)


def within_rounds(d: dict[str, Any], name: str) -> list[float | None]:
    """Per round: the time of the iteration the cable went down in over the p50 of the
    clean run of the same round (run just before it, under the same load); None when
    the cut fell between iterations or the round's job stopped before."""
    out: list[float | None] = []
    for cut, clean in zip(d["runs"][f"{name} cut"]["rounds"], d["runs"][f"{name} clean"]["rounds"], strict=True):
        it, p50 = cut_iteration(cut), clean["iteration_s"].get("p50")
        out.append(None if it is None or not p50 else it["time_s"] / p50)
    return out


def run(fn: Any, workdir: Path, *, nbytes: int, iterations: int, rounds: int, cut_at: float,
        down_for: float) -> dict[str, Any]:
    """``rounds`` times the four runs in turn (the machine's load drifts: each kind of
    run gets its share of every period), each of ``iterations`` iterations."""
    out: dict[str, Any] = {"bytes": nbytes, "iterations": iterations, "rounds": rounds, "link": LINK,
                           "cut_at_s": cut_at, "down_for_s": down_for, "ring": list(RING), "runs": {}}
    reps: dict[str, list[dict[str, Any]]] = {label(n, c): [] for n, c in RUNS}
    for k in range(rounds):
        for name, cut in RUNS:
            spec = JobSpec(ring_allreduce(len(RING), nbytes), RING, transport(name), iterations, timeout=30.0,
                           cut=Cut(LINK, cut_at, down_for) if cut else None, seed=k)
            reps[label(name, cut)].append(run_report(fn, spec, workdir / f"{name}-{cut}-{k}"))
    out["runs"] = {key: pooled(r) for key, r in reps.items()}
    return out


def _p99(d: dict[str, Any], key: str) -> float:
    return float(d["runs"][key]["iteration_s"].get("p99") or float("inf"))


def acceptable(d: dict[str, Any]) -> bool:
    """MRC-lite through the cut: p99 iteration within 1.3 x its clean p99, every byte
    verified, no healthy EV retired (the baseline's figures are reported, not judged)."""
    cut, clean = d["runs"]["MRC-lite cut"], d["runs"]["MRC-lite clean"]
    return bool(cut["complete"] and cut["all_verified"] and clean["all_verified"] and cut["healthy_evs_retired"] == 0
                and _p99(d, "MRC-lite cut") <= 1.3 * _p99(d, "MRC-lite clean"))


def _ratio(d: dict[str, Any], name: str) -> str:
    cut, clean = _p99(d, f"{name} cut"), _p99(d, f"{name} clean")
    done = d["runs"][f"{name} cut"]["iterations_done"] == d["runs"][f"{name} cut"]["iterations_asked"]
    return f"{cut / clean:.2f}" if done and cut < float("inf") else "- (the job did not complete)"


def _run_line(r: Mapping[str, Any]) -> str:
    """One kind of run's line: its iterations, FCT, verdict, healthy EVs retired (how
    many of them a late packet took back), resends (how many on timeouts)."""
    back = f" ({r['healthy_taken_back']} taken back as late)" if r["healthy_taken_back"] else ""
    timeouts = "" if r["resent_on_timeout"] is None else f" ({r['resent_on_timeout']} on timeouts)"
    return (f"iteration {times(r['iteration_s'])}; FCT p99 {r['fct_s'].get('p99', 0):.3f} s; {r['iterations_done']}/"
            f"{r['iterations_asked']} iterations, {verdict(r)}, healthy EVs retired {r['healthy_evs_retired']}{back}, "
            f"retransmissions {r['retransmissions']}{timeouts}")


def figures(d: dict[str, Any]) -> list[str]:
    lines = [f"ring all-reduce of {d['bytes']:,} bytes over {','.join(d['ring'])}, {d['rounds']} rounds of "
             f"{d['iterations']} iterations per run; "
             f"cable {d['link']} cut {d['cut_at_s']:g} s into the job, restored {d['down_for_s']:g} s later"]
    lines += run_lines(d["runs"], _run_line)
    lines.append(f"  p99 iteration with the cut / clean: MRC-lite {_ratio(d, 'MRC-lite')}; RoCE {_ratio(d, 'RoCE')}")
    rounds = "; ".join(f"{name} {' '.join('-' if x is None else f'{x:.2f}' for x in within_rounds(d, name))}"
                       for name in NAMES.values())
    lines.append(f"  the iteration the cable went down in / the same round's clean p50, per round: {rounds}")
    return lines


def plot(d: dict[str, Any]) -> Any:
    plt = C.pyplot()
    fig, (a, b, c) = plt.subplots(1, 3, figsize=(16, 4.2))
    cdf_axes(a, d["runs"])
    a.set_title("iteration times")
    timeline_axes(b, d["runs"]["MRC-lite cut"]["rounds"][0])
    b.set_title("MRC-lite with the cut: each flow")
    timeline_axes(c, d["runs"]["RoCE cut"]["rounds"][0])
    c.set_title("RoCE with the cut: each flow")
    fig.tight_layout()
    return fig


DEFAULTS = C.Defaults(embedded={"nbytes": 1_600_000, "iterations": 4, "rounds": 2, "cut_at": 1.5, "down_for": 2.0},
                      bmv2={"nbytes": 100_000, "iterations": 4, "rounds": 1, "cut_at": 1.0, "down_for": 2.0})
EXPERIMENT = C.Experiment("workload_cut", figures, plot, acceptable, DEFAULTS)
app = C.app(__doc__.split("\n\n")[0])


@app.command()
def cli(
        nbytes: Annotated[Optional[int], C.bytes_option(DEFAULTS, "the all-reduce's message, bytes")] = None,
        iterations: Annotated[Optional[int], typer.Option("--iterations", min=1, help=DEFAULTS.help(
            "iterations", "iterations per run"))] = None,
        rounds: Annotated[Optional[int], typer.Option("--rounds", min=1, help=DEFAULTS.help(
            "rounds", "times the four runs are made in turn"))] = None,
        cut_at: Annotated[Optional[float], typer.Option("--cut-at", min=0, callback=finite, help=DEFAULTS.help(
            "cut_at", "seconds into the job"))] = None,
        down_for: Annotated[Optional[float], typer.Option("--down-for", min=0, callback=finite, help=DEFAULTS.help(
            "down_for", "seconds the cable stays down"))] = None,
        out_dir: C.OutDirOpt = C.RESULTS, prefix: C.PrefixOpt = None, target: C.TargetOpt = "embedded",
        verbose: C.VerboseOpt = False) -> int:
    return C.main(EXPERIMENT, C.Options(out_dir, prefix, target, verbose), run,
                  {"nbytes": nbytes, "iterations": iterations, "rounds": rounds, "cut_at": cut_at,
                   "down_for": down_for})


def main(argv: list[str] | None = None) -> int:
    return C.command(app, "experiments.workload_cut", argv, DEFAULTS)


if __name__ == "__main__":
    raise SystemExit(main())
