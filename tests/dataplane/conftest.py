"""Shared fixtures for the dataplane tests (fabric.p4 and nic.p4 through p4target.Switch).

Why: every dataplane test needs a freshly loaded program and, for multi-switch tests,
a small fabric filled with the controller's entries (tests/dataplane/fabric_net.py).
Frame builders live in tests/dataplane/packets.py.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from fabric.topology import Topology, from_parameters
from tests.dataplane.fabric_net import FABRIC_P4, build, load

# One plane, two leaves, two spines, two hosts per leaf; no trimming unless a test asks.
TINY = from_parameters(name="tiny", planes=1, spines=2, leaves=2, hosts_per_leaf=2, no_trim=True)


@pytest.fixture
def fabric_switch_factory() -> Callable[..., object]:
    """Load a fresh fabric.p4 Switch (optionally filled with controller ``entries``)."""

    def make(entries=(), seed: int = 1):
        return load(FABRIC_P4, entries, seed)

    return make


@pytest.fixture
def tiny_fabric() -> Topology:
    return TINY


@pytest.fixture
def tiny_switches(tiny_fabric: Topology) -> dict[str, object]:
    """Every fabric switch of ``tiny_fabric`` loaded with fabric.p4 and its entries, by name."""
    return build(tiny_fabric)
