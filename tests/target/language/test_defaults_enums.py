"""Default parameter values (P4_16 6.8.2) and serializable enums converting to their
underlying type (8.3); the expected bytes are worked out in defaults_enums.stf and
direct_apply.stf (controls and parsers with defaults)."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4target.stf import run_stf_program

P4 = Path(__file__).parent / "p4"
PROG = P4 / "defaults_enums.p4"


def test_stf() -> None:
    res = run_stf_program(PROG, P4 / "defaults_enums.stf")
    assert res.failures == [] and res.passed


def test_a_parameter_without_default_still_needs_its_argument(refusal) -> None:
    err = refusal(PROG.read_text().replace("bit<8> w = 7", "bit<8> w"))
    assert "missing argument for parameter 'w' of action" in str(err)


def test_an_integer_is_not_an_enum(refusal) -> None:
    err = refusal(PROG.read_text().replace("hdr.d.c = Kind.B;", "Kind k = 8w2; hdr.d.c = k;"))
    assert "cannot" in str(err) or "mismatch" in str(err)


@pytest.mark.bmv2
def test_p4c_accepts_it_with_the_same_names(p4c_names) -> None:
    theirs, ours = p4c_names(PROG)
    assert ours == theirs
