"""End-to-end tests: switches run as a user's do, with the compiled fast path
(tests/conftest.py turns it off for the unit tests)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _as_a_user(native_fast_path: None) -> None:
    pass
