"""The experiments end to end on BMv2 (``simple_switch_grpc``), at a size BMv2 takes:
2 planes x (2 leaves + 2 spines), 2 hosts per leaf (12 BMv2 switches), senders paced
to a few hundred packets/s (BMv2 forwards a few thousand per switch and drops what
it cannot take), smaller transfers. What is asserted is what the embedded target's
runs assert (tests/experiments/outcomes.py), with the values this shape gives.

Skipped with the reason when BMv2 is not on the PATH (the ``bmv2`` marker,
conftest.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.experiments.outcomes import assert_cut_cable_outcome, assert_trimming_outcome

pytestmark = [pytest.mark.root, pytest.mark.bmv2]
pytest.importorskip("mininet.net")

FABRIC_SHAPE = {"planes": 2}  # the fabric fixture's (tests/experiments/conftest.py)
FABRIC_TARGET = "bmv2"


def test_the_switches_are_bmv2(fabric) -> None:
    from topologies.p4switch import Bmv2Switch

    assert len(fabric.p4_switches()) == 2 * 4 + 4
    assert all(isinstance(sw, Bmv2Switch) and "simple_switch_grpc" in sw.command()[0] for sw in fabric.p4_switches())


def test_a_cut_cable_retires_exactly_the_crossing_evs_and_writes_no_table(fabric, tmp_path: Path) -> None:
    from experiments import failure

    # 800 packets at 200 packets/s; the cable (nftables drops on BMv2's cables,
    # docs/mininet.md) cut after 200 of them, for 1.5 s: a crossing EV is retired on
    # the NACK of its first lost packet, and at this pace an EV's turn comes every
    # 64 / 200 s or later (adaptive spraying skips marked EVs), so the cable stays
    # down several turns.
    d = failure.run_all(fabric, tmp_path, links=("p0-leaf0:p0-spine0",), seeds=(1,), nbytes=800_000,
                        rate=200, cut_at=0.25, down_for=1.5)
    # 64 EVs over 4 (plane, spine) paths, EV k on plane k mod 2 and spine k div 2 mod 2
    # (fabric/plan.py): the 16 EVs k = 0, 4, 8, ... cross plane 0's spine 0.
    assert_cut_cable_outcome(fabric, d, [0x1000 + 4 * k for k in range(16)], "nic1 > p0-leaf0 > p0-spine0 > p0-leaf1")


def test_trimming_on_against_off_in_an_incast(fabric, tmp_path: Path) -> None:
    from experiments import trimming

    # 3 x 400 packets/s into 2 x 200 (the port rate set over BMv2's Thrift API): each
    # queue grows by 400 packets/s, past the trim threshold (32) within 0.1 s.
    d = trimming.run(fabric, tmp_path, nbytes=150_000, rate=400, port_rate=200)
    assert_trimming_outcome(fabric, d)
