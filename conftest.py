"""Root conftest: makes the repository importable in tests without installing it.

Being at the repository root, pytest puts this directory on sys.path, so tests import
`p4target`, `topologies`, `tools`, ... from the working tree. It also gives the `root`
marker its meaning: a test that needs root (network namespaces, veths, Mininet) is
skipped with a clear reason instead of failing for a normal user; and the `bmv2`
marker: a test that needs real BMv2 (`simple_switch_grpc`, `simple_switch`,
`p4c-bm2-ss` on the PATH) is skipped without it, and the run's summary says how many
were skipped and why (`.ci/run` puts the repository's neighbour `../shared/bmv2` on
the PATH when it exists).
"""

from __future__ import annotations

import os
import shutil

import pytest

BMV2_TOOLS = ("simple_switch_grpc", "simple_switch", "p4c-bm2-ss")
_bmv2_skipped: list[str] = []


def bmv2_missing() -> list[str]:
    """The BMv2 tools that are not on the PATH."""
    return [t for t in BMV2_TOOLS if shutil.which(t) is None]


def bmv2_skip_reason() -> str:
    return (f"needs BMv2: {', '.join(bmv2_missing())} not on the PATH (install p4c and BMv2, "
            "or `. ../shared/bmv2/env.sh` as .ci/run does)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "bmv2: needs BMv2 and p4c on the PATH; skipped otherwise, listed at the end")


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip tests marked `@pytest.mark.root` when not running as root, and tests marked
    `@pytest.mark.bmv2` when BMv2 is not on the PATH."""
    if item.get_closest_marker("root") is not None and os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, veths, Mininet): run `make test` as root")
    if item.get_closest_marker("bmv2") is not None and bmv2_missing():
        _bmv2_skipped.append(item.nodeid)
        pytest.skip(bmv2_skip_reason())


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:  # type: ignore[no-untyped-def]
    """After the run, name any namespace/veth/process of the project still on the machine.

    Tests must clean up after themselves even when they fail; this makes a leak visible
    at once (as a report, not a failure: on a shared machine another run's live
    resources look the same as a leak). Also lists the tests skipped for want of BMv2.
    """
    if _bmv2_skipped:
        terminalreporter.write_sep("-", f"{len(_bmv2_skipped)} BMv2 tests skipped")
        terminalreporter.write_line(bmv2_skip_reason())
        for nodeid in _bmv2_skipped:
            terminalreporter.write_line(f"  {nodeid}")
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
