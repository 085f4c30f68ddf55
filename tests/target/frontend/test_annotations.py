"""Annotation bodies: free-form tokens (any character), strings over several lines,
structured annotations; a stray character outside an annotation is still refused
with its place."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4target import Switch
from p4target.compiler import compile_file
from p4target.errors import P4Error
from p4target.runtime.entries import Exact

PROG = Path(__file__).parent / "p4" / "annotations.p4"


def test_every_form_is_accepted_and_the_program_runs() -> None:
    sw = Switch.load(PROG)
    sw.table_add("MyIngress.route", {"hdr.eth.ether_type": Exact(0x0800)}, "MyIngress.forward", {"port": 3})
    frame = bytes(12) + b"\x08\x00" + b"payload"
    assert sw.inject(1, frame) == [(3, frame)]


def test_the_string_body_keeps_its_lines() -> None:
    model = compile_file(PROG).model
    (route,) = model.tables
    text = route.annotations["entry_restriction"]
    assert "ether_type != 0;" in text and text.count("\n") == 2, text


def test_a_stray_character_outside_an_annotation_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "bad.p4"
    text = PROG.read_text().replace("apply { route.apply(); }", "apply { route.apply(); ' }")
    bad.write_text(text)
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "route.apply(); '" in ln)
    with pytest.raises(P4Error) as ei:
        compile_file(bad)
    assert str(ei.value) == f"{bad}:{line}:28: error: unexpected character \"'\"; remove it"


def test_an_unclosed_string_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "bad.p4"
    text = PROG.read_text().replace('") @List[1, "two", 3]', ") @List[1, two, 3]")
    bad.write_text(text)
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if '@entry_restriction("' in ln)
    with pytest.raises(P4Error, match=rf"bad\.p4:{line}:24: error: string literal is never closed"):
        compile_file(bad)
