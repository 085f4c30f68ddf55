"""Tokenizer for P4_16 source lines produced by the preprocessor."""

from __future__ import annotations

import re
from dataclasses import dataclass

from p4target.frontend.preprocessor import SourceLine
from p4target.frontend.source import Loc, error

KEYWORDS = frozenset("""
action apply bit bool const control default else enum error exit extern false header
header_union if in inout int match_kind out package parser return select state struct
switch table transition true tuple typedef type varbit void value_set list string entries
priority this abstract key actions for break continue
""".split()) - {"key", "actions", "priority", "entries", "list"}

_TOKEN = re.compile(r"""
 (?P<ws>\s+)
|(?P<num>(?:\d+[ws])?(?:0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|0[dD][0-9_]+|\d[0-9_]*))
|(?P<ident>[A-Za-z_][A-Za-z0-9_]*)
|(?P<str>"(?:[^"\\]|\\.)*")
|(?P<op>&&&|\|\+\|=|\|-\|=|\|\+\||\|-\||<<=|\+:|[-+*/%&|^]=|\.\.|\+\+|&&|\|\||==|!=|<=|<<|[{}()\[\];:,.=+\-*/%&|^~!?@<>])
""", re.VERBOSE)


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # ident, kw, num, str, op, eof
    text: str
    loc: Loc
    value: object = None  # for num: (width or None, signed, int value)

    def __repr__(self) -> str:
        return f"{self.kind}:{self.text}@{self.loc}"


def parse_number(text: str, loc: Loc) -> tuple[int | None, bool, int]:
    """(width, signed, value) of a P4 integer literal such as ``8w0xff`` or ``16s5``."""
    width: int | None = None
    signed = False
    m = re.match(r"(\d+)([ws])(.*)$", text)
    if m:
        width = int(m.group(1))
        signed = m.group(2) == "s"
        text = m.group(3)
    body = text.replace("_", "")
    base = 10
    if len(body) > 1 and body[0] == "0" and body[1] in "xXbBoOdD":
        base = {"x": 16, "b": 2, "o": 8, "d": 10}[body[1].lower()]
        body = body[2:]
    try:
        value = int(body, base)
    except ValueError:
        raise error(loc, f"bad integer literal {text!r}") from None
    if width is not None and width == 0:
        raise error(loc, f"integer literal {text!r} has width 0; use a width >= 1")
    return width, signed, value


def tokenize(lines: list[SourceLine]) -> list[Token]:
    """The tokens of ``lines``. A character no token starts with becomes a ``bad`` token
    (the parser refuses it, but an annotation's free-form body may hold it), and a
    string literal may go on over several lines (as annotation bodies do)."""
    toks: list[Token] = []
    i = 0
    while i < len(lines):
        i = _tokenize_line(lines, i, toks)
    last = lines[-1] if lines else SourceLine("", "<empty>", 1)
    toks.append(Token("eof", "<end of file>", Loc(last.file, last.line, len(last.text) + 1)))
    return toks


def _tokenize_line(lines: list[SourceLine], i: int, toks: list[Token]) -> int:
    """Append the tokens of line ``i`` to ``toks``; returns the index of the next line to read."""
    sl = lines[i]
    text = sl.text
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        loc = Loc(sl.file, sl.line, sl.cols[pos] if pos < len(sl.cols) else pos + 1)
        if not m:
            if text[pos] == '"':
                return _multiline_string(lines, i, pos, loc, toks)
            toks.append(Token("bad", text[pos], loc))
            pos += 1
            continue
        kind = m.lastgroup
        tok = m.group(0)
        pos = m.end()
        if kind == "ws":
            continue
        if kind == "num":
            toks.append(Token("num", tok, loc, parse_number(tok, loc)))
        elif kind == "ident":
            toks.append(Token("kw" if tok in KEYWORDS else "ident", tok, loc))
        elif kind == "str":
            toks.append(Token("str", tok, loc, _string_value(tok)))
        else:
            toks.append(Token("op", tok, loc))
    return i + 1


_STRING_END = re.compile(r'(?:[^"\\]|\\.)*"')


def _multiline_string(lines: list[SourceLine], i: int, pos: int, loc: Loc, toks: list[Token]) -> int:
    """A string literal from line ``i`` at ``pos`` to the first line that closes it."""
    parts = [lines[i].text[pos:]]
    for j in range(i + 1, len(lines)):
        m = _STRING_END.match(lines[j].text)
        if m:
            parts.append(m.group(0))
            text = "\n".join(parts)
            toks.append(Token("str", text, loc, _string_value(text)))
            cols = lines[j].cols or tuple(range(1, len(lines[j].text) + 1))
            rest = SourceLine(lines[j].text[m.end():], lines[j].file, lines[j].line, cols[m.end():])
            return _tokenize_line([*lines[:j], rest, *lines[j + 1:]], j, toks) if rest.text.strip() else j + 1
        parts.append(lines[j].text)
    raise error(loc, "string literal is never closed; add the closing '\"'")


def _string_value(tok: str) -> str:
    return bytes(tok[1:-1], "utf-8").decode("unicode_escape")
