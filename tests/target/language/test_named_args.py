"""Arguments passed by name (to V1Switch, to extern functions) and a parser state
without a transition statement, which goes to reject (P4_16 8.21, 13.5).

The checksums in named_args.stf are worked out by hand there.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from p4target.compiler import compile_file
from p4target.stf import run_stf_program

P4 = Path(__file__).parent / "p4"
PROG = P4 / "named_args.p4"


def test_stf() -> None:
    res = run_stf_program(PROG, P4 / "named_args.stf")
    assert res.failures == [] and res.passed


def test_missing_transition_is_a_reject_with_a_warning() -> None:
    compiled = compile_file(PROG)
    stop_end = next(i for i, ln in enumerate(PROG.read_text().splitlines(), 1) if "state stop" in ln) + 2
    assert any(w.startswith(f"{PROG}:{stop_end}:5: transition to reject") for w in compiled.model.warnings), \
        compiled.model.warnings


def test_unknown_or_missing_names_are_refused(refusal) -> None:
    text = PROG.read_text()
    err = refusal(text.replace("checksum = hdr.d.sum,\n                        data", "checksm = hdr.d.sum,\n"
                               "                        data"))
    assert "no parameter named 'checksm'" in str(err)
    err = refusal(text.replace("ck = MyCompute(),", ""))
    assert "V1Switch takes 6 arguments" in str(err)
    err = refusal(text.replace("ck = MyCompute(),", "ckk = MyCompute(),"))
    assert "no parameter named 'ckk'" in str(err)


@pytest.mark.bmv2
def test_p4c_accepts_it_with_the_same_names(p4c_names) -> None:
    theirs, ours = p4c_names(PROG)
    assert ours == theirs
