"""Fixtures for the NIC dataplane tests: a fresh nic.p4 switch with the controller's entries for one NIC."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from fabric.topology import Topology
from tests.dataplane.fabric_net import NIC_P4, load
from tests.dataplane.nic.nic_case import TEST_FABRIC, NicCase, generated, nic_case


@pytest.fixture
def nic_factory() -> Callable[..., tuple[object, NicCase]]:
    """A Switch running nic.p4 for the NIC at (leaf, port) of ``topo``, filled with
    ``fabric.entries.nic_entries`` (EXPLICIT EVs, or GENERATED with ``generated``)."""

    def make(topo: Topology = TEST_FABRIC, leaf: int = 0, port: int = 1, *,
             generated_evs: bool = False, seed: int = 1) -> tuple[object, NicCase]:
        cfg = nic_case(generated(topo) if generated_evs else topo, leaf, port)
        return load(NIC_P4, cfg.entries(), seed), cfg

    return make


@pytest.fixture
def nic(nic_factory) -> tuple[object, NicCase]:
    """The NIC of host (leaf 0, port 1) with its EXPLICIT EV list and spray group."""
    return nic_factory()
