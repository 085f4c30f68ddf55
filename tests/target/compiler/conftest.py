"""Shared helpers of the compiler tests: paths of the construct programs, loading."""

from __future__ import annotations

from pathlib import Path

import pytest

CONSTRUCTS = Path(__file__).resolve().parents[2] / "p4" / "constructs"


@pytest.fixture
def construct():
    """Path of a test program under tests/p4/constructs/."""

    def path(name: str) -> Path:
        return CONSTRUCTS / name

    return path


@pytest.fixture
def p4file(tmp_path):
    """Write a P4 source into a temporary file (for refusal tests) and return its path."""

    def write(text: str, name: str = "prog.p4") -> Path:
        p = tmp_path / name
        p.write_text(text)
        return p

    return write
