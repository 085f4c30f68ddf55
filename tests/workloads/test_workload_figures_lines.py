"""The workload experiments' figures from records written out by hand: the cut
experiment's rounds pooled, its lines (a RoCE job stopped by a QP in the error state
among them) and its acceptance; the lines every workload experiment shares."""

from __future__ import annotations

from typing import Any

import pytest

from experiments import workload_cut as W
from experiments.workload_runs import run_lines, times, verdict
from workloads.stats import summary

QP_ERROR = "retry count exceeded (7 retries without progress, stuck at PSN 5): the QP is in the error state"


def _flow(it: int, fct: float, error: str | None = None, mrc: bool = False) -> dict[str, Any]:
    """A flow of 2 resends; an MRC-lite one says 1 of them was on a timeout."""
    return {"iteration": it, "src": "h1", "dst": "h3", "fct_s": fct, "retransmissions": 2, "error": error,
            **({"resent_by": {"timeout": 1, "nack": 1, "trim_nack": 0}} if mrc else {})}


def _round(times_s: list[float], *, asked: int = 2, failed: bool = False, healthy: int = 0,
           cut_at: float | None = None, mrc: bool = False) -> dict[str, Any]:
    """One run's report: its iterations back to back from 0 s, the cable down at ``cut_at``."""
    flows = [_flow(i, t / 2, mrc=mrc) for i, t in enumerate(times_s)]
    if failed:
        flows.append(_flow(len(times_s), 0.0, QP_ERROR) | {"fct_s": None})
    starts = [sum(times_s[:i]) for i in range(len(times_s))]
    return {"iterations": [{"start_s": s, "time_s": t} for s, t in zip(starts, times_s, strict=True)], "flows": flows,
            "iteration_s": summary(times_s), "iterations_asked": asked,
            "complete": len(times_s) == asked and not failed, "all_verified": not failed,
            "healthy_evs_retired": healthy, "healthy_retirements": [  # the first taken back, the second not
                {"iteration": 0, "src": "h1", "dst": "h3", "ev": 4148, "retired_s": 0.084, "taken_back_s": 0.086},
                {"iteration": 1, "src": "h4", "dst": "h1", "ev": 4101, "retired_s": 0.2, "taken_back_s": None},
            ][:healthy],
            "cut": None if cut_at is None else {"log": [{"down": True, "t": cut_at}, {"down": False, "t": cut_at + 2}]}}


def _data(mrc_cut: list[float], healthy: int = 0) -> dict[str, Any]:
    runs = {"MRC-lite clean": [_round([1.0, 1.2], mrc=True), _round([1.1, 1.0], mrc=True)],
            "MRC-lite cut": [_round(mrc_cut[:2], healthy=healthy, cut_at=1.5, mrc=True),
                             _round(mrc_cut[2:], cut_at=1.5, mrc=True)],
            "RoCE clean": [_round([2.0, 2.0]), _round([2.0, 2.0])],
            "RoCE cut": [_round([], failed=True, cut_at=1.5), _round([4.0, 2.0], cut_at=1.5)]}
    return {"bytes": 1_600_000, "iterations": 2, "rounds": 2, "link": W.LINK, "cut_at_s": 1.5, "down_for_s": 2.0,
            "ring": list(W.RING), "runs": {k: W.pooled(v) for k, v in runs.items()}}


def test_rounds_pooled() -> None:
    d = _data([1.0, 1.5, 1.0, 1.1])
    cut = d["runs"]["MRC-lite cut"]
    assert cut["iterations_done"] == cut["iterations_asked"] == 4
    # 1.0, 1.0, 1.1, 1.5: p50 between the 2nd and 3rd, p99 at rank 0.99 x 3 = 2.97
    assert cut["iteration_s"]["p50"] == pytest.approx(1.05) and cut["iteration_s"]["p99"] == pytest.approx(1.488)
    assert cut["retransmissions"] == 8 and cut["resent_on_timeout"] == 4 and cut["failed"] == []
    roce = d["runs"]["RoCE cut"]
    assert roce["iterations_done"] == 2 and roce["iterations_asked"] == 4 and not roce["complete"]
    assert roce["resent_on_timeout"] is None  # RoCE's senders say no resends by cause
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
    assert lines[2].endswith("retransmissions 8 (4 on timeouts)") and lines[4].endswith("retransmissions 6")  # 3 flows of 2
    # Round 1: the cable down at 1.5 s, in iteration 1 (1.0 to 2.5 s): 1.5 s over the
    # clean round's p50 1.1 s; round 2: in iteration 1 (1.0 to 2.1 s), 1.1 / 1.05. RoCE
    # round 1 stopped before (no iteration), round 2 in iteration 0 (0 to 4 s): 4 / 2.
    assert lines[6] == ("  the iteration the cable went down in / the same round's clean p50, per round: "
                        "MRC-lite 1.36 1.05; RoCE - 2.00")
    assert W.acceptable(d)


def test_a_healthy_ev_taken_back_is_still_counted() -> None:
    d = _data([1.0, 1.5, 1.0, 1.1], healthy=2)
    assert d["runs"]["MRC-lite cut"]["healthy_taken_back"] == 1
    assert "healthy EVs retired 2 (1 taken back as late), retransmissions 8" in W.figures(d)[2]
    assert not W.acceptable(d)


def test_the_iteration_the_cable_went_down_in() -> None:
    rep = _round([1.0, 1.2, 1.0], cut_at=1.0)  # iterations 0-1, 1-2.2, 2.2-3.2 s
    assert W.cut_iteration(rep) == {"start_s": 1.0, "time_s": 1.2}  # a start counts as in it
    assert W.cut_iteration(_round([1.0, 1.2, 1.0], cut_at=2.19)) == {"start_s": 1.0, "time_s": 1.2}
    assert W.cut_iteration(_round([1.0, 1.2, 1.0], cut_at=3.2)) is None  # after the last one ended
    assert W.cut_iteration(_round([1.0, 1.2])) is None  # no cut


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
