"""Parser of p4c's STF ("simple test framework") files: text to ``StfCommand`` values.

The statements and their meaning are in ``p4target/stf/__init__.py``; this module only
reads them, and reports a bad line as a ``P4Error`` naming ``FILE:LINE:COL`` and the fix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from p4target.errors import P4Error

# --------------------------------------------------------------------------- parsing

_TOKEN_RE = re.compile(
    r"""
    (?P<ws>[ \t\r]+)
  | (?P<num>0[xX][0-9a-fA-F*]+|0[bB][01*]+|0[oO][0-7*]+|[0-9]+(?:\.[0-9]+)?)
  | (?P<id>[A-Za-z_$][A-Za-z0-9_$]*)
  | (?P<op>&&&|->|==|!=|<=|>=|[:(),/=<>.\[\]])
    """,
    re.VERBOSE,
)

_COMPARE_OPS = ("==", "!=", "<", "<=", ">", ">=")

DIRECT_COMMANDS = {
    # keyword: argument shape (n = number, q = qualified name, l = number list,
    # r = rate list)
    "mirroring_add": "nn",
    "mirroring_add_mc": "nn",
    "mirroring_delete": "n",
    "mirroring_get": "n",
    "mc_mgrp_create": "n",
    "mc_node_create": "nl",
    "mc_node_update": "nl",
    "mc_node_associate": "nn",
    "counter_read": "qn",
    "counter_write": "qnnn",
    "register_read": "qn",
    "register_write": "qnn",
    "register_reset": "q",
    "meter_get_rates": "qn",
    "meter_set_rates": "qnr",
    "meter_array_set_rates": "qr",
}


@dataclass(frozen=True)
class Token:
    kind: str  # num, id, op
    text: str
    col: int


@dataclass(frozen=True)
class KeyValue:
    """One ``name:value`` of an ``add``, kept as written until the key width is known."""

    name: str
    value: str
    col: int


@dataclass(frozen=True)
class ActionCall:
    name: str
    args: tuple[KeyValue, ...]
    col: int


@dataclass(frozen=True)
class StfCommand:
    """One STF statement. ``kind`` is the lower-case keyword; the other fields are
    filled according to it (see the module docstring)."""

    kind: str
    line: int
    col: int
    table: str = ""
    priority: int | None = None
    keys: tuple[KeyValue, ...] = ()
    action: ActionCall | None = None
    entry_name: str | None = None
    port: int = 0
    data: bytes = b""
    pattern: str | None = None  # expect: upper-case hex digits and '*'
    exact_length: bool = False
    name: str = ""  # check_counter / check_register / direct commands: object name
    index: str = ""  # check_*: index or $ENTRY
    count_type: str | None = None
    op: str = "=="
    value: int = 0
    numbers: tuple[int, ...] = ()
    rates: tuple[tuple[float, int], ...] = ()


class _LineParser:
    """Recursive-descent parser over the tokens of one line."""

    def __init__(self, path: str, lineno: int, text: str, start_col: int) -> None:
        self.path = path
        self.lineno = lineno
        self.toks: list[Token] = []
        self.pos = 0
        i = 0
        while i < len(text):
            m = _TOKEN_RE.match(text, i)
            if not m:
                raise self.error(start_col + i, f"unexpected character {text[i]!r}",
                                 "write names, numbers and : ( ) , / = only")
            kind = m.lastgroup or ""
            if kind != "ws":
                self.toks.append(Token(kind, m.group(), start_col + i))
            i = m.end()
        self.end_col = start_col + len(text)

    def error(self, col: int, what: str, fix: str = "") -> P4Error:
        msg = f"{what}; {fix}" if fix else what
        return P4Error(msg, f"{self.path}:{self.lineno}:{col}")

    def peek(self, offset: int = 0) -> Token | None:
        i = self.pos + offset
        return self.toks[i] if i < len(self.toks) else None

    def col(self) -> int:
        t = self.peek()
        return t.col if t else self.end_col

    def next(self, kind: str, what: str) -> Token:
        t = self.peek()
        if t is None or t.kind != kind:
            found = f"{t.text!r}" if t else "end of line"
            raise self.error(self.col(), f"expected {what}, found {found}")
        self.pos += 1
        return t

    def accept_op(self, op: str) -> bool:
        t = self.peek()
        if t is not None and t.kind == "op" and t.text == op:
            self.pos += 1
            return True
        return False

    def at_end(self) -> bool:
        return self.pos >= len(self.toks)

    def expect_end(self) -> None:
        if not self.at_end():
            raise self.error(self.col(), f"unexpected {self.peek().text!r} at end of statement")  # type: ignore[union-attr]  # not at the end: there is a next token

    def qualified_name(self, what: str = "a name") -> str:
        name = self.next("id", what).text
        while True:
            if self.accept_op("."):
                name += "." + self.next("id", "a name after '.'").text
            elif self.accept_op("["):
                name += "[" + self.next("num", "an index").text + "]"
                if not self.accept_op("]"):
                    raise self.error(self.col(), "expected ']'")
            else:
                return name

    def integer(self, what: str = "a number") -> int:
        t = self.next("num", what)
        try:
            return parse_int(t.text)
        except ValueError:
            raise self.error(t.col, f"{t.text!r} is not a whole number",
                             "write a decimal, 0x, 0b or 0o number without '*'") from None

    def value_text(self) -> str:
        """A key or argument value, as written: number, number/len, number&&&mask,
        low->high."""
        t = self.next("num", "a value")
        text = t.text
        for op in ("/", "&&&", "->"):
            if self.accept_op(op):
                text += op + self.next("num", f"a number after '{op}'").text
                break
        return text


def parse_int(text: str) -> int:
    """An STF integer literal (no wildcards)."""
    if "*" in text:
        raise ValueError(text)
    t = text.lower()
    if t.startswith("0x"):
        return int(t[2:], 16)
    if t.startswith("0b"):
        return int(t[2:], 2)
    if t.startswith("0o"):
        return int(t[2:], 8)
    return int(t, 10)


def parse_wildcard(text: str) -> tuple[int, int, int]:
    """A literal with ``*`` digits -> (value, mask, written bits). ``*`` digits are 0 in
    the value and in the mask; the mask covers only the written digits, as p4c's BMv2
    runner builds it. Decimal literals have a full mask of their own bit length."""
    t = text.lower()
    bases = {"0x": 4, "0b": 1, "0o": 3}
    bits = bases.get(t[:2])
    if bits is None:
        v = int(t, 10)
        return v, -1, 0  # -1: full mask, decided by the key width
    digits = t[2:]
    value = mask = 0
    full = (1 << bits) - 1
    for d in digits:
        value <<= bits
        mask <<= bits
        if d != "*":
            value |= int(d, 1 << bits)
            mask |= full
    return value, mask, len(digits) * bits


def parse_stf_text(text: str, path: str = "<stf>") -> list[StfCommand]:
    """Parse STF text into commands; raises ``P4Error`` naming file:line:col."""
    cmds: list[StfCommand] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0]
        stripped = line.lstrip()
        if not stripped.strip():
            continue
        col0 = len(line) - len(stripped) + 1
        m = re.match(r"[A-Za-z_]+", stripped)
        if not m:
            raise P4Error(f"expected a command, found {stripped.split()[0]!r}; "
                          "lines start with add, setdefault, packet, expect, ...",
                          f"{path}:{lineno}:{col0}")
        kw = m.group().lower()
        rest = stripped[m.end():]
        rest_col = col0 + m.end()
        if kw in ("packet", "expect"):
            cmds.append(_parse_packet_line(kw, rest, path, lineno, col0, rest_col))
            continue
        p = _LineParser(path, lineno, rest, rest_col)
        cmds.append(_parse_statement(kw, p, col0))
    return cmds


def parse_stf_file(path: Path | str) -> list[StfCommand]:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise P4Error(f"cannot read STF file: {e.strerror}; check the path", str(p)) from None
    except UnicodeDecodeError:
        raise P4Error("STF file is not UTF-8 text", str(p)) from None
    return parse_stf_text(text, str(p))


def _parse_packet_line(kw: str, rest: str, path: str, lineno: int, col0: int,
                       rest_col: int) -> StfCommand:
    where = f"{path}:{lineno}"
    m = re.match(r"\s*([0-9]+)", rest)
    if not m:
        if kw == "expect" and not rest.strip():
            raise P4Error("expect needs a port number; write 'expect PORT [HEX...]'",
                          f"{where}:{rest_col}")
        raise P4Error(f"{kw} needs a port number first; write '{kw} PORT HEX...'",
                      f"{where}:{rest_col}")
    port = int(m.group(1))
    data_text = rest[m.end():]
    data_col = rest_col + m.end()
    compact = "".join(data_text.split())
    exact = False
    if kw == "expect" and compact.endswith("$"):
        exact = True
        compact = compact[:-1]
    allowed = "0123456789abcdefABCDEF" + ("*" if kw == "expect" else "")
    for i, ch in enumerate(data_text):
        if not ch.isspace() and ch not in allowed and not (exact and ch == "$"):
            fix = "packet data is hex digits" + (" and '*' wildcards" if kw == "expect" else "")
            raise P4Error(f"invalid packet data character {ch!r}; {fix}",
                          f"{where}:{data_col + i}")
    if kw == "packet":
        if not compact:
            raise P4Error("packet without data; write 'packet PORT HEX...'", f"{where}:{col0}")
        if len(compact) % 2:
            lead = len(data_text) - len(data_text.lstrip())
            raise P4Error(f"packet data has an odd number of hex digits ({len(compact)}); "
                          "write whole bytes", f"{where}:{data_col + lead}")
        return StfCommand("packet", lineno, col0, port=port, data=bytes.fromhex(compact))
    return StfCommand("expect", lineno, col0, port=port,
                      pattern=compact.upper() if compact else None, exact_length=exact)


def _parse_statement(kw: str, p: _LineParser, col0: int) -> StfCommand:  # noqa: C901 — one case per STF statement keyword, each a few lines
    ln = p.lineno
    if kw == "add":
        table = p.qualified_name("a table name")
        prio: int | None = None
        t0, t1 = p.peek(), p.peek(1)
        if t0 is not None and t0.kind == "num" and not (t1 and t1.kind == "op" and t1.text == ":"):
            prio = p.integer("a priority")
        keys: list[KeyValue] = []
        while True:
            t, t1 = p.peek(), p.peek(1)
            if t is None:
                raise p.error(p.col(), "add without an action",
                              "end the line with ACTION(PARAM:VALUE, ...)")
            # an action is a qualified name followed by '('; a key is followed by ':'
            save = p.pos
            name_col = p.col()
            name = p.qualified_name("a key name or an action")
            if p.accept_op(":"):
                keys.append(KeyValue(name, p.value_text(), name_col))
                continue
            p.pos = save
            break
        action = _parse_action(p)
        entry_name = None
        if p.accept_op("="):
            entry_name = p.next("id", "an entry name after '='").text
        p.expect_end()
        return StfCommand("add", ln, col0, table=table, priority=prio, keys=tuple(keys),
                          action=action, entry_name=entry_name)
    if kw == "setdefault":
        table = p.qualified_name("a table name")
        action = _parse_action(p)
        p.expect_end()
        return StfCommand("setdefault", ln, col0, table=table, action=action)
    if kw == "remove":
        t = p.next("id", "'all'")
        if t.text.lower() != "all":
            raise p.error(t.col, "only 'remove all' is supported",
                          "write 'remove all' to clear every table")
        p.expect_end()
        return StfCommand("remove_all", ln, col0)
    if kw in ("wait", "no_packet"):
        p.expect_end()
        return StfCommand(kw, ln, col0)
    if kw in ("check_counter", "check_register"):
        name = p.qualified_name("a counter name" if kw == "check_counter" else "a register name")
        if not p.accept_op("("):
            raise p.error(p.col(), "expected '(' after the name", f"write {kw} NAME(INDEX) ...")
        t = p.peek()
        if t is None or t.kind not in ("num", "id"):
            raise p.error(p.col(), "expected an index or $ENTRY")
        p.pos += 1
        index = t.text
        if not p.accept_op(")"):
            raise p.error(p.col(), "expected ')'")
        count_type = None
        op = "=="
        value = 0
        if not p.at_end():
            t = p.peek()
            if kw == "check_counter" and t is not None and t.kind == "id":
                if t.text.lower() not in ("packets", "bytes"):
                    raise p.error(t.col, f"unknown count type {t.text!r}", "write packets or bytes")
                count_type = t.text.lower()
                p.pos += 1
            t = p.peek()
            if t is not None and t.kind == "op" and t.text in _COMPARE_OPS:
                op = t.text
                p.pos += 1
            elif t is not None:
                raise p.error(t.col, f"expected a comparison, found {t.text!r}",
                              "write one of == != < <= > >=")
            value = p.integer("a value to compare with")
            p.expect_end()
        return StfCommand(kw, ln, col0, name=name, index=index, count_type=count_type,
                          op=op, value=value)
    shape = DIRECT_COMMANDS.get(kw)
    if shape is None:
        known = ", ".join(["add", "setdefault", "remove", "packet", "expect", "wait",
                           "check_counter", "check_register", *DIRECT_COMMANDS])
        raise p.error(col0, f"unknown STF command {kw!r}", f"use one of: {known}")
    name = ""
    numbers: list[int] = []
    rates: list[tuple[float, int]] = []
    for s in shape:
        if s == "q":
            name = p.qualified_name("a name")
        elif s == "n":
            numbers.append(p.integer())
        elif s == "l":
            while not p.at_end() and p.peek().kind == "num":  # type: ignore[union-attr]  # as above
                numbers.append(p.integer())
        elif s == "r":
            while not p.at_end():
                t = p.next("num", "RATE:BURST")
                try:
                    rate = float(t.text) if "." in t.text else float(parse_int(t.text))
                except ValueError:
                    raise p.error(t.col, f"bad rate {t.text!r}") from None
                if not p.accept_op(":"):
                    raise p.error(p.col(), "expected ':' between rate and burst",
                                  "write RATE:BURST")
                rates.append((rate, p.integer("a burst size")))
            if not rates:
                raise p.error(p.col(), "expected RATE:BURST pairs")
    p.expect_end()
    return StfCommand(kw, ln, col0, name=name, numbers=tuple(numbers), rates=tuple(rates))


def _parse_action(p: _LineParser) -> ActionCall:
    col = p.col()
    name = p.qualified_name("an action name")
    if not p.accept_op("("):
        raise p.error(p.col(), f"expected '(' after action {name!r}",
                      f"write {name}() or {name}(PARAM:VALUE, ...)")
    args: list[KeyValue] = []
    if not p.accept_op(")"):
        while True:
            acol = p.col()
            aname = p.next("id", "a parameter name").text
            if not p.accept_op(":"):
                raise p.error(p.col(), f"expected ':' after parameter {aname!r}",
                              "write PARAM:VALUE")
            args.append(KeyValue(aname, p.next("num", "a parameter value").text, acol))
            if p.accept_op(")"):
                break
            if not p.accept_op(","):
                raise p.error(p.col(), "expected ',' or ')' in the action's arguments")
    return ActionCall(name, tuple(args), col)
