"""A job's figures from a record written out by hand: steps adding up to the
iteration, FCTs and slowdowns, link use per plane and per spine."""

from __future__ import annotations

import pytest

from workloads.figures import link_use, report, step_times


def _flow(it: int, fid: int, step: int, started: float, arrived: float, size: int = 1_000_000) -> dict[str, object]:
    return {"iteration": it, "id": fid, "step": step, "src": 0, "dst": 1, "src_host": "h1", "dst_host": "h3",
            "size": size, "started": started, "arrived": arrived, "verified": True, "received_bytes": size}


RAW = {
    "job": "allreduce", "transport": "mrc", "hosts": ["h1", "h3"], "iterations": 2, "steps": 2,
    "started_at": 100.0, "iteration_starts": [100.0, 101.0], "iteration_ends": [101.0, 103.0],
    "flows": [_flow(0, 1, 0, 100.0, 100.4), _flow(0, 2, 0, 100.0, 100.5), _flow(0, 3, 1, 100.5, 101.0),
              _flow(1, 1, 0, 101.0, 102.0), _flow(1, 3, 1, 102.0, 103.0)],
    "errors": [],
    "links": [{"name": "p0-leaf0:p0-spine0", "plane": 0, "spine": "p0-spine0"},
              {"name": "p0-leaf1:p0-spine0", "plane": 0, "spine": "p0-spine0"},
              {"name": "p1-leaf0:p1-spine0", "plane": 1, "spine": "p1-spine0"}],
    "link_packets": {"p0-leaf0:p0-spine0": 10, "p0-leaf1:p0-spine0": 5, "p1-leaf0:p1-spine0": 7},
}


def test_steps_run_from_the_end_of_the_step_before() -> None:
    assert step_times(RAW["flows"][:3], 100.0, 2) == pytest.approx([0.5, 0.5])  # type: ignore[arg-type]
    assert step_times([], 5.0, 2) == [0.0, 0.0]


def test_the_report() -> None:
    rep = report(RAW, capacity_bps=8e6)  # 1 MB over 8 Mb/s: 1 s alone
    assert [it["time_s"] for it in rep["iterations"]] == [1.0, 2.0]
    assert [it["steps_s"] for it in rep["iterations"]] == [pytest.approx([0.5, 0.5]), pytest.approx([1.0, 1.0])]
    assert rep["iteration_s"]["p50"] == 1.5 and rep["iteration_s"]["max"] == 2.0
    assert rep["iteration_s"]["p99"] == pytest.approx(1.99)
    assert [f["fct_s"] for f in rep["flows"]] == pytest.approx([0.4, 0.5, 0.5, 1.0, 1.0])
    assert [f["slowdown"] for f in rep["flows"]] == pytest.approx([0.4, 0.5, 0.5, 1.0, 1.0])
    assert rep["complete"] and rep["all_verified"] and rep["bytes_verified"] == 5_000_000
    assert rep["link_use"] == {"per_plane": {"0": 15, "1": 7}, "per_spine": {"p0-spine0": 15, "p1-spine0": 7}}


def test_a_flow_not_arrived_leaves_the_job_incomplete() -> None:
    raw = {**RAW, "flows": [*RAW["flows"][:4], {**RAW["flows"][4], "arrived": None, "verified": False}],  # type: ignore[dict-item]
           "iteration_ends": [101.0], "errors": ["flow 3: no verdict"]}
    rep = report(raw, None)
    assert not rep["complete"] and not rep["all_verified"] and rep["iterations_done"] == 1
    assert rep["bytes_verified"] == 4_000_000 and rep["slowdown"] == {"n": 0}
    assert rep["flows_failed"] == 0  # not arrived, but its sender named no error


def test_a_failed_queue_pair_is_a_failed_flow() -> None:
    """A RoCE flow whose QP went to the error state: failed, with its reason and its QP's EV."""
    qp_error = "retry count exceeded (7 retries without progress)"
    failed = {**RAW["flows"][4], "arrived": None, "verified": False, "error": qp_error,  # type: ignore[dict-item]
              "qp_ev": 4100, "source_port": 50001}
    raw = {**RAW, "transport": "roce", "flows": [*RAW["flows"][:4], failed], "iteration_ends": [101.0],
           "errors": [f"flow 3 of iteration 1 (h1 -> h3): {qp_error}"]}
    rep = report(raw, None)
    assert rep["flows_failed"] == 1 and not rep["complete"]
    assert rep["flows"][4]["error"] == qp_error and rep["flows"][4]["qp_ev"] == 4100
    assert rep["flows"][4]["source_port"] == 50001 and "qp_ev" not in rep["flows"][0]


def test_link_use_of_nothing() -> None:
    assert link_use({}, []) == {"per_plane": {}, "per_spine": {}}
