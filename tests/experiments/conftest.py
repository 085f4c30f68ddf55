"""End-to-end tests: switches run as a user's do, with the compiled fast path
(tests/conftest.py turns it off for the unit tests); and the one way an experiment's
test starts its fabric.

Why one ``fabric`` fixture: every module of these tests starts one Mininet fabric
for its tests (module scope: a start costs seconds to minutes) under a private prefix
and, after it, checks that nothing of that prefix is left; only the shape and the
target differ, and a module says them (``FABRIC_SHAPE``, ``FABRIC_TARGET``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from experiments import common as C
from tests.mininet.net_prefix import assert_nothing_left


@pytest.fixture(autouse=True)
def _as_a_user(native_fast_path: None) -> None:
    pass


@pytest.fixture(scope="module")
def fabric(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The module's fabric: the experiments' shape with the module's ``FABRIC_SHAPE``
    overrides, on its ``FABRIC_TARGET`` (default embedded), programmed, under a private
    prefix; after the module, nothing of that prefix may be left."""
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, veths, Mininet): run `make test` as root")
    shape: dict[str, int] = getattr(request.module, "FABRIC_SHAPE", {})
    target: str = getattr(request.module, "FABRIC_TARGET", "embedded")
    prefix = C.private_prefix()
    run_dir = tmp_path_factory.mktemp(f"{request.module.__name__.rsplit('.', 1)[-1]}-run")
    try:
        with C.programmed_fabric(C.topology(**shape), prefix, run_dir, target=target) as fn:
            yield fn
    finally:
        assert_nothing_left(prefix, run_dir)
