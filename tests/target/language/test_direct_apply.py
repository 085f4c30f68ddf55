"""Direct invocation of a control or parser type, ``T.apply(args)`` (P4_16 13.8.1, 14.4).

Expectations by hand: each invocation is an instance of its own (AddOne applied
twice adds 2), named after the type as p4c names it (``MyIngress.Lookup.t``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from p4target.compiler import compile_file
from p4target.stf import run_stf_program

P4 = Path(__file__).parent / "p4"
PROG = P4 / "direct_apply.p4"


def test_stf() -> None:
    res = run_stf_program(PROG, P4 / "direct_apply.stf")
    assert res.failures == [] and res.passed


def test_names_follow_the_type() -> None:
    model = compile_file(PROG).model
    assert [t.name for t in model.tables] == ["MyIngress.Lookup.t"]
    assert "MyIngress.Lookup.set" in {a.name for a in model.actions}


@pytest.mark.bmv2
def test_p4c_gives_the_same_names(p4c_names) -> None:
    theirs, ours = p4c_names(PROG)
    assert theirs["tables"] == ["MyIngress.Lookup.t"]
    assert ours == theirs
