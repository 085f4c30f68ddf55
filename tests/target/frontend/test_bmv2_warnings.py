"""p4c-bm2-ss's warning for a default_action that BMv2 ignores (tables with an action
profile or selector), given by the embedded target too.

Expectation from p4c's BMv2 back end (backends/bmv2/common/control.cpp): for a table
whose implementation is an action profile or selector and that has a default_action
property, it warns "Target does not support default_action for T (due to action
profiles)" at the table and writes no default entry.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from p4target.compiler import compile_file

P4 = Path(__file__).parent / "p4"
REPO = Path(__file__).resolve().parents[3]
P4C_TEXT = "Target does not support default_action for {} (due to action profiles)"


def _profile_warnings(path: Path) -> list[str]:
    return [w for w in compile_file(path).model.warnings if "due to action profiles" in w]


def test_warned_only_where_bmv2_ignores_the_default() -> None:
    path = P4 / "indirect_default.p4"
    warnings = _profile_warnings(path)
    assert len(warnings) == 2
    sel, prof = warnings
    assert sel.startswith(f"{path}:22:") and P4C_TEXT.format("IIngress.with_selector") in sel
    assert prof.startswith(f"{path}:28:") and P4C_TEXT.format("IIngress.renamed") in prof
    for w in warnings:
        assert "remove default_action" in w  # the fix is named
    assert not any("profile_no_default" in w or "IIngress.direct" in w for w in warnings)


def test_compile_prints_the_warning_and_succeeds() -> None:
    out = subprocess.run([sys.executable, "-m", "p4target", "compile", str(P4 / "indirect_default.p4")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0
    lines = [ln for ln in out.stderr.splitlines() if "due to action profiles" in ln]
    assert len(lines) == 2 and all(ln.startswith("p4target: warning: ") for ln in lines)


def test_project_programs_get_no_such_warning() -> None:
    # nic.p4's spray table had default_action = no_path() with a selector; BMv2 ignored it
    for prog in ("nic.p4", "fabric.p4"):
        assert _profile_warnings(REPO / "p4src" / prog) == [], prog
