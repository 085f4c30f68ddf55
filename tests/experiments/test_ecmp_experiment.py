"""The ECMP-collisions experiment end to end (experiments/ecmp.py) on its own Mininet
fabric: 4 planes x (2 leaves + 2 spines), 4 hosts per leaf, embedded target.

Why its own fabric: four flows between distinct host pairs across leaves need 4
hosts per leaf. Asserted: every byte of every flow (received files against the
generated data), both ways; MRC spraying's slowest flow within 1.25x of its mean and
sooner than per-flow hashing's slowest; the hashed flows used at most one uplink
each, spraying every one; the uplinks and the entries put back after. The senders
start through the experiment's barrier (tests/experiments/test_start_together.py).
400 KB per flow: 400 packets each, 0.8 s sprayed over 8 links of 250 packets/s, so
the start-up (first windows, the first round trips) is a small part of each flow's
time.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.experiments.outcomes import assert_ecmp_outcome
from tests.experiments.roce_outcomes import assert_ecmp_roce

pytestmark = pytest.mark.root
pytest.importorskip("mininet.net")

FABRIC_SHAPE = {"hosts_per_leaf": 4}  # the fabric fixture's (tests/experiments/conftest.py)


def test_spraying_has_no_slow_flow_and_beats_per_flow_hashing(fabric, tmp_path: Path) -> None:
    from experiments import ecmp

    d = ecmp.run(fabric, tmp_path, nbytes=400_000, link_rate=250)
    assert_ecmp_outcome(fabric, d)
    assert_ecmp_roce(fabric, d)
