"""Fixtures for the NIC dataplane tests: a fresh nic.p4 switch with a NIC's entries."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.dataplane.nic.nic_plan import TEST_FABRIC as FABRIC
from tests.dataplane.nic.nic_plan import Fabric, NicConfig, explicit_evs, install_nic

NIC_P4 = Path(__file__).resolve().parents[3] / "p4src" / "nic.p4"


@pytest.fixture
def nic_factory() -> Callable[..., tuple[object, NicConfig]]:
    """Build a Switch running nic.p4 for the NIC at (leaf, port) of ``fabric``."""
    from p4target import Switch

    def make(fabric: Fabric = FABRIC, leaf: int = 0, port: int = 1, *,
             explicit: bool = True, seed: int = 1, **install) -> tuple[object, NicConfig]:
        sw = Switch.load(str(NIC_P4), seed=seed)
        cfg = NicConfig(fabric, leaf, port,
                        explicit=explicit_evs(fabric, leaf, port) if explicit else [])
        install_nic(sw, cfg, **install)
        return sw, cfg

    return make


@pytest.fixture
def nic(nic_factory) -> tuple[object, NicConfig]:
    """The NIC of host (leaf 0, port 1) with its EXPLICIT EV list and spray group."""
    return nic_factory()
