"""The plots of a job and of jobs compared: the CDF of iteration times per run, a
timeline of the flows with the cut, the load of each fabric link."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from workloads.stats import cdf


def pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def cdf_axes(ax: Any, runs: Mapping[str, Mapping[str, Any]], key: str = "iteration", xlabel: str = "") -> None:
    """CDF per run of its iteration times (``key`` "iteration") or flow slowdowns ("slowdown")."""
    for label, rep in runs.items():
        if key == "iteration":
            values = [it["time_s"] for it in rep["iterations"]]
        else:
            values = [f["slowdown"] for f in rep["flows"] if f["slowdown"] is not None]
        if values:
            x, y = cdf(values)
            ax.step(x, y, where="post", label=label)
    ax.set_xlabel(xlabel or ("iteration time, s" if key == "iteration" else "FCT slowdown"))
    ax.set_ylabel("fraction")
    ax.legend(fontsize=8)


def timeline_axes(ax: Any, rep: Mapping[str, Any]) -> None:
    """Each flow from its start to its arrival (seconds after the job's start), the cut shaded."""
    raw = rep["raw"]
    t0 = raw["started_at"]
    for i, f in enumerate(raw["flows"]):
        if f.get("started") is not None and f.get("arrived") is not None:
            ax.plot([f["started"] - t0, f["arrived"] - t0], [i, i], color=f"C{f['iteration'] % 10}", linewidth=1.5)
    for end in raw["iteration_ends"]:
        ax.axvline(end - t0, color="grey", linewidth=0.6)
    cut = raw.get("cut")
    if cut:
        downs = [c["t"] for c in cut["log"] if c["down"]]
        ups = [c["t"] for c in cut["log"] if not c["down"]]
        if downs:
            ax.axvspan(downs[0], ups[0] if ups else raw["ended_at"] - t0, color="red", alpha=0.12,
                       label=f"{cut['link']} down")
            ax.legend(fontsize=8, loc="lower right")
    ax.set_xlabel("seconds after the job's start")
    ax.set_ylabel("flow (iteration colour)")


def links_axes(ax: Any, rep: Mapping[str, Any]) -> None:
    packets = rep["raw"]["link_packets"]
    names = list(packets)
    ax.bar(range(len(names)), [packets[n] for n in names], color="tab:blue")
    ax.set_xticks(range(len(names)), names, rotation=60, ha="right", fontsize=6)
    ax.set_ylabel("packets (both directions)")


def job_figure(rep: Mapping[str, Any]) -> Any:
    plt = pyplot()
    fig, (a, b, c) = plt.subplots(1, 3, figsize=(16, 4.2))
    cdf_axes(a, {f"{rep['job']} {rep['transport']}": rep})
    timeline_axes(b, rep)
    links_axes(c, rep)
    fig.tight_layout()
    return fig
