"""Checks of p4c's front end that the target makes too, each an error with its place.

Expectations, from p4c (frontends/p4/getV1ModelVersion.h, the p4runtime_translation
rule of frontends/parsers/p4/p4parser.ypp, the shift rule of its type checker, the
duplicate-name check of its P4Info serializer):
- ``V1MODEL_VERSION`` must be a non-negative integer between 20180101 and 20200408;
  the error is at the constant's initializer in v1model.p4;
- ``@p4runtime_translation("uri", T)``: T is ``string``, ``bit<INTEGER>`` or an
  integer; anything else is a syntax error at the first token that does not fit;
- a shift's right operand of a ``type``-declared type is an error at that operand
  (cast it to bit<W> and it shifts as bit<W>: 3 << 2 = 12);
- two tables (or extern instances) of one P4Info name are an error: a block
  instantiated twice whose table has ``@name(".x")``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from p4target import Switch
from p4target.compiler import compile_file
from p4target.errors import P4Error

PROG = Path(__file__).parent / "p4" / "front_checks.p4"
V1MODEL = Path(__file__).parents[3] / "p4target" / "include" / "v1model.p4"


def _variant(tmp_path: Path, old: str, new: str) -> tuple[Path, str]:
    text = PROG.read_text()
    assert old in text
    text = text.replace(old, new, 1)
    bad = tmp_path / "bad.p4"
    bad.write_text(text)
    return bad, text


def _line_of(text: str, needle: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines(), 1) if needle in ln)


def _place(text: str, needle: str, at: str) -> tuple[int, int]:
    """(line, column) of ``at`` on the line holding ``needle``."""
    line = _line_of(text, needle)
    return line, text.splitlines()[line - 1].index(at) + 1


def _error(path: Path) -> str:
    with pytest.raises(P4Error) as ei:
        compile_file(path)
    return str(ei.value)


def test_the_program_runs_its_shift_and_keeps_two_tables_apart() -> None:
    sw = Switch.load(PROG)
    assert [t.name for t in sw.model.tables] == ["Ing.first.choose", "Ing.second.choose"]
    frame = bytes([3, 2]) + b"rest"  # value 3, amount 2
    assert sw.inject(3, frame) == [(1, bytes([12, 2]) + b"rest")]
    sw.table_set_default("Ing.first.choose", "Ing.first.to", {"port": 5})
    assert sw.inject(3, frame) == [(5, bytes([12, 2]) + b"rest")]
    sw.table_set_default("Ing.second.choose", "Ing.second.to", {"port": 4})  # applied last
    assert sw.inject(3, frame) == [(4, bytes([12, 2]) + b"rest")]


def _version_line() -> tuple[int, int]:
    text = V1MODEL.read_text()
    line = _line_of(text, "__v1model_version =")
    return line, text.splitlines()[line - 1].index("V1MODEL_VERSION") + 1


@pytest.mark.parametrize("version", ["20180101", "20200408"])
def test_a_known_v1model_version_is_accepted(version: str) -> None:
    assert compile_file(PROG, defines={"V1MODEL_VERSION": version}).model.tables


@pytest.mark.parametrize(("version", "why"), [
    ("-6419018", "__v1model_version: expected v1model version to be a non-negative integer literal"),
    ("20000101", "20000101: unknown v1model version; initial supported version is 20180101, latest is 20200408"),
    ("20200409", "20200409: unknown v1model version"),
])
def test_another_v1model_version_is_refused_at_the_constant(version: str, why: str) -> None:
    line, col = _version_line()
    with pytest.raises(P4Error) as ei:
        compile_file(PROG, defines={"V1MODEL_VERSION": version})
    assert str(ei.value).startswith(f"{V1MODEL.resolve()}:{line}:{col}: error: {why}")


@pytest.mark.parametrize(("old", "new", "token"), [
    ('"example.org/shift_t", bit<8>)', '"example.org/shift_t", bool)', "bool"),
    ('"example.org/shift_t", bit<8>)', '"example.org/shift_t", int<8>)', "int"),
    ('"example.org/shift_t", bit<8>)', '"example.org/shift_t", bit<5+3>)', "+"),
    ('"example.org/shift_t", bit<8>)', '"example.org/shift_t", bit<W>)', "W"),
    ('"example.org/shift_t", bit<8>)', '"example.org/shift_t")', ")"),
    ('"example.org/shift_t", bit<8>)', 'example, bit<8>)', "example"),
])
def test_a_translation_to_another_type_is_a_syntax_error_at_its_token(
        tmp_path: Path, old: str, new: str, token: str) -> None:
    bad, text = _variant(tmp_path, old, new)
    line = _line_of(text, new)
    col = text.splitlines()[line - 1].index(new) + new.index(token) + 1 if token != ")" else None
    with pytest.raises(P4Error) as ei:
        compile_file(bad)
    msg = str(ei.value)
    if col is None:  # nothing after the URI: the annotation is incomplete, placed at its last token
        assert msg.startswith(f"{bad}:{line}:") and "@p4runtime_translation is incomplete" in msg
    else:
        assert msg.startswith(f"{bad}:{line}:{col}: error: syntax error in @p4runtime_translation: "
                              f"unexpected '{token}'")


def test_a_shift_by_a_type_value_is_refused_at_the_operand(tmp_path: Path) -> None:
    bad, text = _variant(tmp_path, "<< (bit<8>)hdr.op.amount", "<< hdr.op.amount")
    line, col = _place(text, "<< hdr.op.amount", "hdr.op.amount;")
    assert _error(bad) == (f"{bad}:{line}:{col}: error: shift amount must be bit<W> or a non-negative "
                             "integer, not type shift_t; cast it: (bit<8>)")


def test_one_p4info_name_for_two_tables_is_refused(tmp_path: Path) -> None:
    bad, text = _variant(tmp_path, '@name("choose")', '@name(".choose")')
    line, col = _place(text, '@name(".choose")', "choose {")
    assert _error(bad).startswith(f"{bad}:{line}:{col}: error: the name 'choose' is used for more than "
                                    "one table in the P4Info")
