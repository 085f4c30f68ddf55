"""Shared fixtures for the dataplane tests (fabric.p4 and nic.p4 through p4target.Switch).

Why: every dataplane test needs a freshly loaded program and, for multi-switch tests,
a tiny fabric filled as the controller would fill it (tests/dataplane/tiny_fabric.py).
Frame builders live in tests/dataplane/packets.py.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.dataplane.tiny_fabric import FABRIC_P4, Node, TinyFabric, build, install


@pytest.fixture
def fabric_switch_factory() -> Callable[..., object]:
    """Load a fresh fabric.p4 Switch (optionally filled with ``entries``)."""
    from p4target import Switch

    def make(entries=(), seed: int = 1):
        sw = Switch.load(str(FABRIC_P4), seed=seed)
        install(sw, entries)
        return sw

    return make


@pytest.fixture
def tiny_fabric() -> TinyFabric:
    """One plane, two leaves, two spines, two hosts per leaf."""
    return TinyFabric()


@pytest.fixture
def tiny_switches(tiny_fabric: TinyFabric) -> dict[Node, object]:
    """Every switch of ``tiny_fabric`` loaded with fabric.p4 and its entries."""
    return build(tiny_fabric)
