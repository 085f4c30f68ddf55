"""A path's capacity for the slowdowns: what one flow alone gets on the idle fabric.

Why measured: on the embedded target the links have no rate of their own (the
switches' CPU is the limit), so a flow's ideal time is taken from a flow of the same
transport alone, between the job's first two hosts (on different leaves), before
the job. ``--capacity`` gives it instead, e.g. to compare transports on one scale.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from workloads.runner import JobSpec, run_job
from workloads.schedule import Flow, Schedule

BYTES = 1_000_000


def capacity_bps(fn: Any, spec: JobSpec, workdir: Path, nbytes: int = BYTES) -> float | None:
    """Bits per second of one ``nbytes`` flow alone (None if it did not arrive)."""
    one = Schedule("calibrate", 2, (Flow(1, 0, 1, nbytes, 0.0),))
    raw = run_job(fn, replace(spec, schedule=one, hosts=spec.hosts[:2], iterations=1, cut=None, background=()),
                  workdir)
    f = raw["flows"][0] if raw["flows"] else {}
    if f.get("arrived") is None or f.get("started") is None or not f.get("verified"):
        return None
    return float(nbytes * 8 / (f["arrived"] - f["started"]))
