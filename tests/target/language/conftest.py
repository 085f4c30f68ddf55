"""Shared fixture of the language-construct tests: refusals with FILE:LINE:COL.

(Each test module names its own ``P4 = Path(__file__).parent / "p4"``: a value
imported from a conftest module clashes with the other test directories' ones.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from p4target.compiler import compile_file
from p4target.errors import P4Error


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
