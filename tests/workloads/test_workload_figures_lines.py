"""The workload experiments' figures from records written out by hand: the cut
experiment's rounds pooled, its lines (a RoCE job stopped by a QP in the error state
among them) and its acceptance; the lines every workload experiment shares."""

from __future__ import annotations

from typing import Any

import pytest

from experiments import workload_cut as W
from experiments.workload_runs import run_lines, times, verdict

QP_ERROR = "retry count exceeded (7 retries without progress, stuck at PSN 5): the QP is in the error state"


def _flow(it: int, fct: float, error: str | None = None) -> dict[str, Any]:
    return {"iteration": it, "src": "h1", "dst": "h3", "fct_s": fct, "retransmissions": 2, "error": error}


def _round(times_s: list[float], *, asked: int = 2, failed: bool = False, healthy: int = 0) -> dict[str, Any]:
    flows = [_flow(i, t / 2) for i, t in enumerate(times_s)]
    if failed:
        flows.append(_flow(len(times_s), 0.0, QP_ERROR) | {"fct_s": None})
    return {"iterations": [{"time_s": t} for t in times_s], "flows": flows, "iterations_asked": asked,
            "complete": len(times_s) == asked and not failed, "all_verified": not failed,
            "healthy_evs_retired": healthy}


def _data(mrc_cut: list[float], healthy: int = 0) -> dict[str, Any]:
    runs = {"MRC-lite clean": [_round([1.0, 1.2]), _round([1.1, 1.0])],
            "MRC-lite cut": [_round(mrc_cut[:2], healthy=healthy), _round(mrc_cut[2:])],
            "RoCE clean": [_round([2.0, 2.0]), _round([2.0, 2.0])],
            "RoCE cut": [_round([], failed=True), _round([4.0, 2.0])]}
    return {"bytes": 1_600_000, "iterations": 2, "rounds": 2, "link": W.LINK, "cut_at_s": 1.5, "down_for_s": 2.0,
            "ring": list(W.RING), "runs": {k: W.pooled(v) for k, v in runs.items()}}


def test_rounds_pooled() -> None:
    d = _data([1.0, 1.5, 1.0, 1.1])
    cut = d["runs"]["MRC-lite cut"]
    assert cut["iterations_done"] == cut["iterations_asked"] == 4
    # 1.0, 1.0, 1.1, 1.5: p50 between the 2nd and 3rd, p99 at rank 0.99 x 3 = 2.97
    assert cut["iteration_s"]["p50"] == pytest.approx(1.05) and cut["iteration_s"]["p99"] == pytest.approx(1.488)
    assert cut["retransmissions"] == 8 and cut["failed"] == []
    roce = d["runs"]["RoCE cut"]
    assert roce["iterations_done"] == 2 and roce["iterations_asked"] == 4 and not roce["complete"]
    assert [f["error"] for f in roce["failed"]] == [QP_ERROR]


def test_the_lines_and_the_verdict() -> None:
    d = _data([1.0, 1.5, 1.0, 1.1])
    lines = W.figures(d)
    assert lines[1].startswith("  MRC-lite clean: iteration p50 1.050 s, p99 1.197 s, max 1.200 s;")
    assert lines[4].startswith("  RoCE cut      : iteration p50 3.000 s, p99 3.980 s, max 4.000 s;")
    assert (f"2/4 iterations, every byte verified False; 1 flow(s) FAILED (first: iteration 0 h1 -> h3: "
            f"{QP_ERROR}), healthy EVs retired 0") in lines[4]
    # MRC-lite: 1.488 / 1.197 (clean p99: 1.0, 1.0, 1.1, 1.2 at rank 2.97); RoCE: stopped, no ratio
    assert lines[5] == "  p99 iteration with the cut / clean: MRC-lite 1.24; RoCE - (the job did not complete)"
    assert W.acceptable(d)


@pytest.mark.parametrize(("mrc_cut", "healthy"), [([1.0, 1.6, 1.0, 1.1], 0), ([1.0, 1.5, 1.0, 1.1], 1)])
def test_not_acceptable(mrc_cut: list[float], healthy: int) -> None:
    """p99 1.594 / 1.197 = 1.33 over the 1.3 bound; or one healthy EV retired."""
    assert not W.acceptable(_data(mrc_cut, healthy))


def test_the_shared_parts() -> None:
    assert times({"p50": 1.0, "p99": 2.5, "max": 3.25}, 2) == "p50 1.00 s, p99 2.50 s, max 3.25 s"
    assert times({"n": 0}) == "p50 0.000 s, p99 0.000 s, max 0.000 s"
    assert verdict({"all_verified": True, "flows": [_flow(0, 1.0)]}) == "every byte verified True"
    assert verdict({"all_verified": False, "flows": [_flow(0, 1.0), _flow(1, 0.0, "no verdict")]}) == \
        "every byte verified False; 1 flow(s) FAILED (first: iteration 1 h1 -> h3: no verdict)"
    assert run_lines({"a": {"x": 1}, "longer": {"x": 2}}, lambda r: f"x {r['x']}") == ["  a     : x 1",
                                                                                       "  longer: x 2"]
