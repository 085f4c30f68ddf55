"""What the workload experiments (``workload_cut``, ``workload_alltoall``,
``workload_matrix``) share: a job run into its report with its raw record, and the
parts of the line each run prints (its label, its iteration times, its verdict).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from workloads.figures import report
from workloads.runner import JobSpec, run_job


def run_report(fn: Any, spec: JobSpec, workdir: Path, capacity_bps: float | None = None) -> dict[str, Any]:
    """Run ``spec`` on the fabric ``fn``: its report (``workloads.figures.report``),
    the raw record under ``raw``."""
    raw = run_job(fn, spec, workdir)
    rep = report(raw, capacity_bps)
    rep["raw"] = raw
    return rep


def times(s: Mapping[str, Any], digits: int = 3) -> str:
    """A summary's p50, p99 and max in seconds (0 for an empty one)."""
    return ", ".join(f"{k} {s.get(k, 0):.{digits}f} s" for k in ("p50", "p99", "max"))


def verdict(r: Mapping[str, Any]) -> str:
    """Whether every byte of the run was verified; and the flows that failed (its
    ``failed`` when it has one, else those of its ``flows`` with an error), with the
    first one's reason (a RoCE QP in the error state)."""
    text = f"every byte verified {r['all_verified']}"
    failed = r["failed"] if "failed" in r else [f for f in r.get("flows", []) if f.get("error")]
    if failed:
        f = failed[0]
        text += (f"; {len(failed)} flow(s) FAILED (first: iteration {f['iteration']} {f['src']} -> {f['dst']}: "
                 f"{f['error']})")
    return text


def run_lines(runs: Mapping[str, Mapping[str, Any]], line: Callable[[Mapping[str, Any]], str]) -> list[str]:
    """One line per run, its label padded to the longest: ``  label: line(run)``."""
    width = max((len(k) for k in runs), default=0)
    return [f"  {label:{width}}: {line(r)}" for label, r in runs.items()]
