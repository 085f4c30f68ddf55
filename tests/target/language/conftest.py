"""Shared helpers of the language-construct tests: the programs under p4/, refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4target.compiler import compile_file
from p4target.errors import P4Error

P4 = Path(__file__).parent / "p4"


@pytest.fixture
def refusal(tmp_path: Path):
    """Compile ``text`` and return the error; the message must start with FILE:LINE:COL."""

    def compile_error(text: str) -> P4Error:
        p = tmp_path / "bad.p4"
        p.write_text(text)
        with pytest.raises(P4Error) as ei:
            compile_file(p)
        assert str(ei.value).startswith(f"{p}:"), str(ei.value)
        return ei.value

    return compile_error
