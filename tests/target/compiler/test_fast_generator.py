"""The fast-path generator (p4target/compiler/fastgen.py) on every program of the
repository: each one either gets a fast path that is valid Python or is refused
with ``NoFast`` for the reason written out here, never another exception.

Why: ``build_fast`` keeps a program running when the generator fails (it falls
back to the general path), so a generator bug would otherwise only show as a
program that silently lost its fast path. Here the generator runs directly, and
any exception but ``NoFast`` fails with its traceback. That a bug still reaches a
user as a warning, and only as a warning, is checked with a fault put into the
real generator.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from fast_toggle import ROOT
from test_fast_path import PROGRAMS

from p4target import Switch
from p4target.compiler import compile_file, fast_compiler
from p4target.compiler.fast_errors import NoFast
from p4target.compiler.fastgen import generate_fast
from p4target.frontend.lexer import tokenize
from p4target.frontend.parser import parse_tokens
from p4target.frontend.preprocessor import preprocess

# every program listed without a fast path -> the start of the NoFast reason (the
# first construct the generator meets that it leaves to the general path)
REFUSED: dict[str, str] = {
    "tests/p4/constructs/parser_features.p4": "varbit field opt_t.data at ",
    "tests/target/frontend/p4/controller_struct.p4": "header packet_out_t has a struct-typed field",
    "tests/target/frontend/p4/front_checks.p4": "Fwd instantiated at ",
    "tests/target/frontend/p4/lookahead_stack.p4": "lookahead of a struct",
    "tests/target/frontend/p4/varbit_fields.p4": "varbit field opt_t.data at ",
    "tests/target/language/p4/compound_assign.p4": "function call",
    "tests/target/language/p4/copy_inout.p4": "header union",
    "tests/target/language/p4/direct_apply.p4": "DataParser instantiated at ",
    "tests/target/language/p4/eval_order.p4": "function call",
    "tests/target/language/p4/for_loops.p4": "for loop at ",
    "tests/target/language/p4/header_eq.p4": "== on headers",
    "tests/target/language/p4/local_init_calls.p4": "function call",
    "tests/target/language/p4/struct_fields.p4": "header rec_t has a struct-typed field",
    "tests/target/language/p4/sub_blocks.p4": "DataParser instantiated at ",
    "tests/target/language/p4/union_stack.p4": "a parser loop through several states",
    "tests/target/language/p4/varbit_checksum.p4": "varbit field ipv4_t.options at ",
}


def ast_of(path: Path):  # type: ignore[no-untyped-def]
    """The program's AST, as ``compile_file`` gives it to ``build_fast``."""
    return parse_tokens(tokenize(preprocess(path, (), {})))


def test_every_refusal_has_its_reason() -> None:
    assert set(REFUSED) == {rel for rel, must in PROGRAMS.items() if not must}


@pytest.mark.parametrize("rel", sorted(PROGRAMS))
def test_generator_gives_a_fast_path_or_refuses(rel: str) -> None:
    path = ROOT / rel
    compile_file(path)  # the general compile accepts it: build_fast only ever sees such programs
    try:
        src = generate_fast(ast_of(path), path)
    except NoFast as e:
        assert not PROGRAMS[rel], f"{rel} must have a fast path, but the generator refused it: {e}"
        assert str(e).startswith(REFUSED[rel]), f"{rel}: refused for {e!r}, not {REFUSED[rel]!r}"
        return
    assert PROGRAMS[rel], f"{rel} is listed without a fast path but gets one"
    compile(src.text, f"<fast:{rel}>", "exec")  # a SyntaxError here is a generator bug too


VARBIT_SET_VALID = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
header opt_t { bit<8> len; varbit<32> data; bit<8> trailer; }
struct hs_t { h_t h; opt_t opt; }
struct m_t { bit<8> unused; }
parser P(packet_in pk, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control V(inout hs_t hdr, inout m_t meta) { apply { } }
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (hdr.h.a == 1) {
            hdr.opt.setValid();
            hdr.opt.len = 3;
            hdr.opt.trailer = hdr.opt.len + 1;
        }
    }
}
control E(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) { apply { } }
control C(inout hs_t hdr, inout m_t meta) { apply { } }
control D(packet_out pk, in hs_t hdr) { apply { pk.emit(hdr.h); pk.emit(hdr.opt); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def test_a_varbit_header_never_extracted_is_refused_too(tmp_path: Path) -> None:
    """A header with a varbit field that the program only validates and writes (no
    extract with a length) is refused as well: its fields' offsets after the varbit
    are not constants either. The general path forwards it: setValid leaves the
    varbit empty, so the header is its two fixed bytes."""
    src = tmp_path / "varbit_set_valid.p4"
    src.write_text(VARBIT_SET_VALID)
    with pytest.raises(NoFast, match=r"^varbit field opt_t\.data at "):
        generate_fast(ast_of(src), src)
    sw = Switch(compile_file(src), seed=7)
    for _ in range(2):
        assert sw.inject(0, b"\x01rest") == [(1, b"\x01" + bytes([3, 4]) + b"rest")]
        assert sw.inject(0, b"\x02rest") == [(1, b"\x02rest")]
    assert sw.program.fast_source() is None and sw.fast_packets == 0


PLUS_ONE = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct hs_t { h_t h; }
struct m_t { bit<8> unused; }
parser P(packet_in pk, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control V(inout hs_t hdr, inout m_t meta) { apply { } }
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 2; hdr.h.a = hdr.h.a + 1; }
}
control E(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) { apply { } }
control C(inout hs_t hdr, inout m_t meta) { apply { } }
control D(packet_out pk, in hs_t hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def test_a_generator_bug_is_a_warning_and_the_program_still_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """A fault put into the real generator (its parser emitter raising) costs the
    program its fast path only: a warning with the exception and its traceback, and
    every frame forwarded by the general path. Without the fault the same program's
    frames after the first take the fast path; a refusal (``NoFast``) is no warning."""
    src = tmp_path / "plus_one.p4"
    src.write_text(PLUS_ONE)

    def broken(self, d):  # type: ignore[no-untyped-def]
        raise ZeroDivisionError("injected")

    caplog.set_level(logging.DEBUG, logger="p4target.compiler")
    good = Switch(compile_file(src), seed=7)
    assert good.program.fast_source() is not None  # generated now (else at its first frame)
    monkeypatch.setattr(fast_compiler.FastCompiler, "gen_parser", broken)
    bad = Switch(compile_file(src), seed=7)
    for sw in (good, bad):
        for a in (1, 7, 0xFF):
            assert sw.inject(0, bytes([a]) + b"rest") == [(2, bytes([(a + 1) & 0xFF]) + b"rest")]
    assert good.fast_packets == 2
    assert bad.fast_packets == 0 and bad.program.fast_source() is None
    warned = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warned) == 1 and warned[0].levelno == logging.WARNING
    assert "plus_one.p4: no fast path" in warned[0].getMessage()
    assert "ZeroDivisionError: injected" in warned[0].getMessage()
    assert warned[0].exc_info is not None and warned[0].exc_info[0] is ZeroDivisionError
    monkeypatch.undo()
    caplog.clear()
    refused = compile_file(ROOT / "tests/p4/constructs/parser_features.p4")
    assert refused.fast_source() is None
    got = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "p4target.compiler.fastgen"]
    assert len(got) == 1 and got[0][0] == logging.DEBUG and "no fast path (varbit field opt_t.data" in got[0][1]
