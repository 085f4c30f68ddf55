"""The target's core.p4/v1model.p4 define p4c's include guards (_CORE_P4_, _V1_MODEL_P4_).

Programs written against p4c's headers test those names (``#ifdef _CORE_P4_``); with
other guard names their code would silently disappear. Expectations: p4c's headers
open with ``#ifndef _CORE_P4_ / #define _CORE_P4_`` and ``#ifndef _V1_MODEL_P4_ /
#define _V1_MODEL_P4_``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from p4target.frontend.preprocessor import Preprocessor
from p4target.stf import run_stf_program

P4 = Path(__file__).parent / "p4"


def test_guards_are_defined_after_including_the_headers(tmp_path: Path) -> None:
    prog = tmp_path / "g.p4"
    prog.write_text("#include <v1model.p4>\n")
    pp = Preprocessor()
    pp.run(prog)
    assert "_CORE_P4_" in pp.macros  # v1model.p4 includes core.p4
    assert "_V1_MODEL_P4_" in pp.macros
    # a program that defines the guard itself keeps p4c's meaning: the header is skipped
    prog.write_text("#define _CORE_P4_\n#include <core.p4>\n")
    pp = Preprocessor()
    lines = pp.run(prog)
    assert not any("packet_in" in ln.text for ln in lines)


def test_program_testing_the_guards_sees_its_code() -> None:
    res = run_stf_program(P4 / "guard_macros.p4", P4 / "guard_macros.stf")
    assert res.failures == []
    assert list(res.received) == [2]


def test_stf_command_passes_on_the_guard_program() -> None:
    out = subprocess.run([sys.executable, "-m", "p4target", "stf", str(P4 / "guard_macros.p4"),
                          str(P4 / "guard_macros.stf")], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("PASS")
