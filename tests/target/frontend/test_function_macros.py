"""Function-like macros in the preprocessor, as C99 6.10.3 (p4c runs cpp) defines them.

Expected expansions are worked out by hand from the C rules: arguments split at
top-level commas, each argument fully expanded before substitution, the result
rescanned with the rest of the line, a macro never expanded inside its own expansion,
``#define N (x)`` (space before the parenthesis) object-like.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from p4target.compiler import compile_file
from p4target.errors import P4Error, UnsupportedError
from p4target.frontend.preprocessor import preprocess
from p4target.stf import run_stf_program

P4 = Path(__file__).parent / "p4"


def expand(tmp_path: Path, text: str) -> list[str]:
    p = tmp_path / "m.p4"
    p.write_text(text)
    return [ln.text.strip() for ln in preprocess(p)]


def test_p4_program_with_function_like_macros_runs() -> None:
    res = run_stf_program(P4 / "function_macros.p4", P4 / "function_macros.stf")
    assert res.failures == []
    assert list(res.received) == [3]


@pytest.mark.parametrize(("defs", "use", "want"), [
    ("#define F(x) ((x) + 1)", "F(2)", "((2) + 1)"),
    ("#define F(x) ((x) + 1)", "F((1, 2))", "(((1, 2)) + 1)"),               # nested parens
    ("#define F(x) ((x) + 1)", "F(F(0))", "((((0) + 1)) + 1)"),              # macro in argument
    ("#define A(a, b) a-b", "A( (x) , f(y, z) )", "(x)-f(y, z)"),           # spaces trimmed
    ("#define F(x) [x]\n#define G F", "G(7)", "[7]"),                       # name from a macro
    ("#define F(x) [x]", "F", "F"),                                          # no '(': no call
    ("#define F (x)", "F", "(x)"),                                           # object-like
    ("#define L(x) L(x)", "L(1)", "L(1)"),                                   # no recursion
    ("#define Z() 42", "Z()", "42"),
    ("#define V(a, ...) g(a, __VA_ARGS__)", "V(1, 2, 3)", "g(1, 2, 3)"),
    ("#define F(x) x", 'F("F(1)")', '"F(1)"'),                              # strings untouched
    ("#define N 5\n#define F(x) x", "F(1..N) 8w3", "1..5 8w3"),              # P4 ranges, literals
])
def test_expansions(tmp_path: Path, defs: str, use: str, want: str) -> None:
    lines = expand(tmp_path, f"{defs}\n{use}\n")
    assert lines[-2] == want  # the last line is the empty one after the final newline


def test_call_spanning_lines_keeps_numbering(tmp_path: Path) -> None:
    lines = expand(tmp_path, "#define A(a, b) (a + b)\nx = A(1,\n      2);\ny;\n")
    assert lines[1] == "x = (1 + 2);"
    assert lines[2] == "" and lines[3] == "y;"  # y is still on line 4


def test_macro_in_if_expression(tmp_path: Path) -> None:
    lines = expand(tmp_path, "#define TWICE(x) ((x) * 2)\n#if TWICE(3) == 6\nyes\n#else\nno\n#endif\n")
    assert "yes" in lines and "no" not in lines


@pytest.mark.parametrize(("text", "line", "col", "message"), [
    ("#define A(a, b) a\nx = A(1);\n", 2, 5,
     "macro A(a, b) takes 2 argument(s), got 1; pass one per parameter (parenthesize commas inside one)"),
    ("#define F(x) x\nx = F(1,\n", 2, 5, "unterminated argument list of macro F; close it with ')'"),
    ("#define F(x\n", 1, 1, "#define F(: missing ')' after the parameter names"),
    ("#define F(1) x\n", 1, 1,
     "#define F(...): parameter '1' is not a name; write identifiers separated by commas (and ... last)"),
    ("#define F(x, x) x\n", 1, 1, "#define F(...): parameter 'x' appears twice"),
])
def test_errors_name_file_line_col(tmp_path: Path, text: str, line: int, col: int, message: str) -> None:
    p = tmp_path / "bad.p4"
    p.write_text(text)
    with pytest.raises(P4Error) as ei:
        preprocess(p)
    assert str(ei.value) == f"{p}:{line}:{col}: error: {message}"


def test_stringify_and_paste_are_refused(tmp_path: Path) -> None:
    for body in ("#x", "a ## b"):
        p = tmp_path / "s.p4"
        p.write_text(f"#define S(x) {body}\n")
        with pytest.raises(UnsupportedError) as ei:
            preprocess(p)
        assert "# or ## operator (in macro S)" in str(ei.value) and str(ei.value).startswith(f"{p}:1:1:")


@pytest.mark.parametrize(("old", "new", "needle"), [
    # a bad argument: the argument's own place in the source
    ("hdr.val.a = INC(hdr.val.a);", "hdr.val.a = INC(hdr.val.nope);", "hdr.val.nope"),
    # after an expansion on the same line: its own column, not shifted by the expansion
    ("hdr.val.d = PICK(hdr.val.d) + BASE;", "hdr.val.d = PICK(hdr.val.d) + BASE + nope;", "nope"),
    # inside a macro body: the call of the macro
    ("#define INC(x) ((x) + 1)", "#define INC(x) ((x) + nope)", "INC(hdr.val.a)"),
    # an object-like macro inside an argument: that macro's name
    ("#define BASE 0x10", "#define BASE nope", "BASE))"),
])
def test_compile_errors_in_expanded_lines_name_the_source_column(tmp_path: Path, old: str, new: str,
                                                                 needle: str) -> None:
    text = (P4 / "function_macros.p4").read_text().replace(old, new)
    p = tmp_path / "err.p4"
    p.write_text(text)
    lines = text.splitlines()
    line = next(k for k, ln in enumerate(lines, start=1) if needle in ln and not ln.startswith("#"))
    col = lines[line - 1].index(needle) + 1
    with pytest.raises(P4Error) as ei:
        compile_file(p)
    assert ei.value.location == f"{p}:{line}:{col}", str(ei.value)
    assert "nope" in str(ei.value)
