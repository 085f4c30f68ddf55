"""A job's figures from what its run recorded (pure): per iteration its completion
time and its steps, per flow its completion time (FCT) and slowdown, the bytes
verified, link use per plane and per spine.

A step's time runs from the end of the step before it (the iteration's start for the
first) to the arrival of its last flow, so an iteration's steps add up to it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from workloads.stats import slowdown, summary


def step_times(flows: Sequence[Mapping[str, Any]], start: float, steps: int) -> list[float]:
    """The seconds of each step of one iteration (flows: its records)."""
    out = []
    prev = start
    for k in range(steps):
        ends = [f["arrived"] for f in flows if f["step"] == k and f.get("arrived") is not None]
        end = max(ends, default=prev)
        out.append(end - prev)
        prev = max(prev, end)
    return out


def iterations(raw: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per completed iteration: its start (seconds after the job's), time and steps."""
    t0 = raw["started_at"]
    out = []
    for i, (start, end) in enumerate(zip(raw["iteration_starts"], raw["iteration_ends"], strict=False)):
        flows = [f for f in raw["flows"] if f["iteration"] == i]
        out.append({"iteration": i, "start_s": start - t0, "time_s": end - start,
                    "steps_s": step_times(flows, start, raw["steps"])})
    return out


def flow_figures(raw: Mapping[str, Any], capacity_bps: float | None) -> list[dict[str, Any]]:
    out = []
    for f in raw["flows"]:
        fct = None if f.get("arrived") is None or f.get("started") is None else f["arrived"] - f["started"]
        sd = None if fct is None or not capacity_bps else slowdown(fct, f["size"], capacity_bps)
        out.append({"iteration": f["iteration"], "id": f["id"], "step": f["step"], "src": f["src_host"],
                    "dst": f["dst_host"], "bytes": f["size"], "bytes_received": f.get("received_bytes"), "fct_s": fct, "slowdown": sd,
                    "verified": bool(f.get("verified")), "retransmissions": f.get("retransmissions"),
                    "evs_retired": f.get("evs_retired", []), "error": f.get("error"),
                    **({"qp_ev": f["qp_ev"], "source_port": f.get("source_port")} if "qp_ev" in f else {}),
                    **({"resent_by": f["resent_by"]} if "resent_by" in f else {})})
    return out


def link_use(counts: Mapping[str, int], links: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """Packets per plane and per spine, summed over the fabric links (both directions)."""
    planes: dict[str, int] = {}
    spines: dict[str, int] = {}
    for link in links:
        n = counts.get(link["name"], 0)
        planes[str(link["plane"])] = planes.get(str(link["plane"]), 0) + n
        spines[link["spine"]] = spines.get(link["spine"], 0) + n
    return {"per_plane": planes, "per_spine": spines}


def report(raw: Mapping[str, Any], capacity_bps: float | None) -> dict[str, Any]:
    """Everything a job's run says, in one JSON-able value."""
    its = iterations(raw)
    flows = flow_figures(raw, capacity_bps)
    done = [f for f in flows if f["fct_s"] is not None]
    steps = raw["steps"]
    per_step = [summary([it["steps_s"][k] for it in its]) for k in range(steps)] if its else []
    return {
        "job": raw["job"], "transport": raw["transport"], "hosts": raw["hosts"], "iterations_asked": raw["iterations"],
        "iterations_done": len(its), "complete": len(its) == raw["iterations"] and not raw.get("errors"),
        "iteration_s": summary([it["time_s"] for it in its]), "iterations": its, "step_s": per_step,
        "fct_s": summary([f["fct_s"] for f in done]),
        "slowdown": summary([f["slowdown"] for f in done if f["slowdown"] is not None]),
        "capacity_bps": capacity_bps,
        "bytes_scheduled": sum(f["bytes"] for f in flows),
        "bytes_verified": sum(f["bytes"] for f in flows if f["verified"] and f["bytes_received"] == f["bytes"]),
        "all_verified": bool(flows) and all(f["verified"] for f in flows),
        "flows_failed": sum(1 for f in flows if f["error"]),
        "link_use": link_use(raw.get("link_packets", {}), raw.get("links", [])),
        "healthy_evs_retired": raw.get("healthy_evs_retired"), "healthy_retirements": raw.get("healthy_retirements", []),
        "cut": raw.get("cut"),
        "flows": flows, "errors": list(raw.get("errors", [])),
    }
