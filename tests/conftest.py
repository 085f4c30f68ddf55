"""Settings of the whole suite.

The compiled fast path (p4target/accel/native.py) is off unless a test asks
for it: each of the many programs the unit tests load would otherwise start a C
build in the background, and a test's switch would change fast paths halfway.
The tests about it ask (``native_fast_path``: tests/target/compiler/test_native.py,
the differential test of tests/target/compiler/test_fast_path.py), and so do the
end-to-end tests (tests/mininet, tests/experiments), whose switches run as a
user's do; ``make test`` builds the compiled fast paths of p4src/*.p4 first, so
those switches take them from their first frame.
"""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _interpreted_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("P4TARGET_NATIVE", "0")


@pytest.fixture
def native_fast_path(_interpreted_fast_path: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled fast path on, as for a user (after the suite's default above)."""
    monkeypatch.setenv("P4TARGET_NATIVE", "1")
