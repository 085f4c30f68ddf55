"""Root conftest: makes the repository importable in tests without installing it.

Being at the repository root, pytest puts this directory on sys.path, so tests import
`p4target`, `topologies`, `tools`, ... from the working tree. It also gives the `root`
marker its meaning: a test that needs root (network namespaces, veths, Mininet) is
skipped with a clear reason instead of failing for a normal user.
"""

from __future__ import annotations

import os

import pytest


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip tests marked `@pytest.mark.root` when not running as root."""
    if item.get_closest_marker("root") is not None and os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, veths, Mininet): run `make test` as root")
