"""Private Mininet name prefixes for tests, and the check that a test left nothing.

Why: every test network runs under its own node prefix (`mrc` + 3 random characters:
interface names have 15 characters) so it never touches another network, and after
it nothing of that prefix may be left (namespaces, veths, processes, pid files).
"""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from tools.cleanup import clean, find_leftovers


def private_prefix() -> str:
    return "mrc" + secrets.token_hex(2)[:3]


def assert_nothing_left(prefix: str, run_dir: Path) -> None:
    """Fail (after removing them) if resources of ``prefix`` are still there."""
    left = find_leftovers((prefix,), directory=run_dir)
    if not left.empty():
        clean((prefix,), directory=run_dir)
        pytest.fail(f"the network left behind {left.describe()}")
