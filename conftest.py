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


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:  # type: ignore[no-untyped-def]
    """After the run, name any namespace/veth/process of the project still on the machine.

    Tests must clean up after themselves even when they fail; this makes a leak visible
    at once (as a report, not a failure: on a shared machine another run's live
    resources look the same as a leak).
    """
    if os.geteuid() != 0:
        return
    try:
        from tools.cleanup import find_leftovers
    except ImportError:
        return
    left = find_leftovers()
    if not left.empty():
        terminalreporter.write_sep("-", "project resources still present after the tests")
        terminalreporter.write_line(left.describe())
        terminalreporter.write_line("a test leaked them, or another run is active; `make clean` removes them")
