"""Every v1model program in the repository (p4src, bench, test programs) compiles.

The fabric and NIC programs are written by other people at the same time as the
compiler; this catches a construct they use that the compiler does not handle yet.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from p4target.compiler import compile_file

ROOT = Path(__file__).resolve().parents[3]
MAIN = re.compile(r"\)\s*main\s*;")


def programs() -> list[Path]:
    found = []
    for top in ("p4src", "bench", "tests"):
        for p in sorted((ROOT / top).rglob("*.p4")):
            if MAIN.search(p.read_text(errors="replace")):
                found.append(p)
    return found


@pytest.mark.parametrize("path", programs(), ids=lambda p: str(p.relative_to(ROOT)))
def test_program_compiles(path: Path) -> None:
    compiled = compile_file(path)
    model = compiled.model
    assert model.arch == "v1model"
    names = [t.name for t in model.tables]
    assert len(names) == len(set(names))
    for t in model.tables:
        # the default action is one of the table's actions, and every action is in the model
        assert t.default_action in {a.name for a in t.actions}
        for ref in t.actions:
            model.action(ref.name)
    assert "def build(rt):" in compiled.python_source


def test_the_project_programs_are_among_them() -> None:
    names = {p.name for p in programs()}
    for required in ("basic_l3.p4", "parser_features.p4", "tables_externs.p4"):
        assert required in names
