"""The healthy EVs a job's senders retired (workloads/runner.py ``healthy_retirements``),
from flow records written out by hand on the default fabric (4 planes x 2 spines, 64
EVs per NIC: EV 4096 + 8 k + 4 spine + plane)."""

from __future__ import annotations

from typing import Any

from fabric.resolve import Shape, resolve
from workloads.collectives import ring_allreduce
from workloads.runner import Cut, JobSpec, healthy_retirements
from workloads.transports import transport

TOPO = resolve(None, Shape()).topology
RING = ("h1", "h3", "h2", "h4")


def spec(cut: Cut | None) -> JobSpec:
    return JobSpec(ring_allreduce(4, 4000), RING, transport("mrc"), 1, cut=cut)


RECORDS: list[dict[str, Any]] = [
    # The first transfer: 4148 (plane 0, spine 1) and 4096 (plane 0, spine 0) retired
    # on spurious NACKs, both taken back by late packets.
    {"iteration": 0, "src_host": "h1", "dst_host": "h3", "evs_retired": [4148, 4096],
     "ev_events": [[0.084, 4148, "retired", "nack"], [0.084, 4096, "retired", "nack"],
                   [0.086, 4148, "restored", "late"], [0.097, 4096, "restored", "late"]]},
    # 4101 (plane 1, spine 1) retired, never taken back (a probe brought it back).
    {"iteration": 1, "src_host": "h4", "dst_host": "h1", "evs_retired": [4101],
     "ev_events": [[0.2, 4101, "retired", "nack"], [0.25, 4101, "recovered", "probe"]]},
    # A sender that retired nothing, and a RoCE QP's record (no EV events).
    {"iteration": 1, "src_host": "h3", "dst_host": "h2", "evs_retired": [], "ev_events": []},
    {"iteration": 1, "src_host": "h2", "dst_host": "h4", "evs_retired": []},
]


def test_with_a_cut_the_evs_through_the_cable_are_not_healthy() -> None:
    # h1 -> h3 over plane 0 spine 0 crosses p0-leaf0:p0-spine0: 4096 is not counted.
    assert healthy_retirements(TOPO, spec(Cut("p0-leaf0:p0-spine0", 1.5, 2.0)), RECORDS) == [
        {"iteration": 0, "src": "h1", "dst": "h3", "ev": 4148, "retired_s": 0.084, "taken_back_s": 0.086},
        {"iteration": 1, "src": "h4", "dst": "h1", "ev": 4101, "retired_s": 0.2, "taken_back_s": None}]


def test_without_a_cut_every_retired_ev_is_healthy() -> None:
    got = healthy_retirements(TOPO, spec(None), RECORDS)
    assert [(h["src"], h["ev"], h["taken_back_s"]) for h in got] == [
        ("h1", 4096, 0.097), ("h1", 4148, 0.086), ("h4", 4101, None)]


def test_a_retirement_without_its_events_has_no_times() -> None:
    # A record from before the senders reported their EV events.
    rec = {"iteration": 0, "src_host": "h1", "dst_host": "h3", "evs_retired": [4100]}
    assert healthy_retirements(TOPO, spec(None), [rec]) == [
        {"iteration": 0, "src": "h1", "dst": "h3", "ev": 4100, "retired_s": None, "taken_back_s": None}]
