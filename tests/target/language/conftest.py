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



@pytest.fixture
def p4c_names(tmp_path: Path):
    """Names of a program's P4Info entities by kind, from p4c-bm2-ss and from the target,
    as ``(p4c's, ours)`` (tests using it are marked ``bmv2``)."""
    import subprocess

    from finsy.proto.p4.config.v1 import p4info_pb2
    from google.protobuf import text_format

    from p4target.p4info import build_p4info

    def names(info: p4info_pb2.P4Info) -> dict[str, list[str]]:
        kinds = ("tables", "actions", "counters", "direct_counters", "registers", "meters", "value_sets",
                 "action_profiles")
        return {k: sorted(e.preamble.name for e in getattr(info, k)) for k in kinds}

    def both(program: Path) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        out = tmp_path / f"{program.stem}.p4info.txtpb"
        subprocess.run(["p4c-bm2-ss", "--std", "p4-16", "-o", str(tmp_path / "out.json"),
                        "--p4runtime-files", str(out), str(program)], check=True, capture_output=True)
        theirs = text_format.Parse(out.read_text(), p4info_pb2.P4Info())
        return names(theirs), names(build_p4info(compile_file(program).model))

    return both
