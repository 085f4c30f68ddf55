"""Runner for p4c's STF ("simple test framework") files against the embedded target.

p4c's own tests describe a run as a text file: table entries to add, packets to send
in, packets expected out. Running the same files here checks the embedded target the
way p4c checks BMv2, and lets the project write its own packet tests in a format that
real BMv2 understands too (``p4c/backends/bmv2/run-bmv2-test.py``).

Statements, one per line (``#`` starts a comment; keywords are case-insensitive):

- ``add TABLE [PRIORITY] KEY:VALUE ... ACTION(PARAM:VALUE, ...) [= NAME]``. Values
  are decimal, ``0x``/``0b``/``0o`` literals; ``*`` digits are wildcards for ternary
  keys (the written digits form the mask, as p4c's BMv2 runner does); ``VALUE/LEN``
  for LPM (without ``/LEN`` the prefix covers the non-``*`` bits); ``VALUE&&&MASK``
  and ``LOW->HIGH`` are accepted too (simple_switch_CLI's forms). Keys not written
  are wildcards (exact keys: 0, as in p4c's runner). A higher priority wins
  (STF priority p is P4Runtime priority p+1, since p4c's tests use 0); stack elements
  may be written ``name$N`` as p4c's runner allows.
  ``= NAME`` names the entry so ``check_counter DIRECT_COUNTER($NAME)`` can read it.
- ``setdefault TABLE ACTION(PARAM:VALUE, ...)``; ``remove all`` clears every table.
- ``packet PORT HEX...``; ``expect PORT HEX...[$]`` where ``*`` is a wildcard nibble,
  a trailing ``$`` forbids extra bytes, and ``expect PORT`` alone accepts any number of
  packets on that port. Expectations are compared at the end, per port, in any order
  within the port (``ordered=True`` compares in order as BMv2's runner does); a port
  that sends a packet nobody expected fails the test.
- ``wait`` (the target is synchronous: nothing to wait for).
- ``check_counter NAME(INDEX|$ENTRY) [packets|bytes] [==|!=|<|<=|>|>=] VALUE``.
- simple_switch_CLI pass-through commands: ``mc_mgrp_create G``,
  ``mc_node_create RID PORT...``, ``mc_node_update HANDLE PORT...``,
  ``mc_node_associate G HANDLE``, ``mirroring_add SESSION PORT``,
  ``mirroring_add_mc SESSION GROUP``, ``mirroring_delete SESSION``,
  ``mirroring_get SESSION``, ``counter_read NAME INDEX``,
  ``counter_write NAME INDEX PACKETS BYTES``, ``register_read NAME INDEX``,
  ``register_write NAME INDEX VALUE``, ``register_reset NAME``,
  ``meter_get_rates NAME INDEX``, ``meter_set_rates NAME INDEX RATE:BURST ...``,
  ``meter_array_set_rates NAME RATE:BURST ...`` (rates per microsecond, as the CLI).
- Extension of this runner: ``check_register NAME(INDEX) [OP] VALUE``.

Names may be written in full (``MyIngress.t``) or by a unique dot-separated suffix
(``t``), as p4c's runner allows.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from p4target.errors import EntryError, P4Error

if TYPE_CHECKING:  # pragma: no cover - typing only
    from p4target.model import ProgramModel, Table

log = logging.getLogger(__name__)

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


# --------------------------------------------------------------------------- running


@dataclass
class StfResult:
    """What a run did and whether every expectation held."""

    failures: list[str] = field(default_factory=list)
    received: dict[int, list[bytes]] = field(default_factory=dict)
    packets_sent: int = 0
    commands: int = 0
    log: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.failures


def _suffix_lookup(names: list[str], wanted: str, what: str, where: str) -> str:
    if wanted in names:
        return wanted
    cands = [n for n in names if n.endswith("." + wanted)]
    if len(cands) == 1:
        return cands[0]
    if not cands:
        shown = ", ".join(sorted(names)[:12]) or "none"
        raise P4Error(f"no {what} named {wanted!r}; the program has: {shown}", where)
    raise P4Error(f"{what} name {wanted!r} is ambiguous ({', '.join(sorted(cands))}); "
                  "write more of the name", where)


def match_pattern(pattern: str, exact_length: bool, packet: bytes) -> str | None:
    """None if ``packet`` matches the expect pattern, else why not."""
    got = packet.hex().upper()
    if len(got) < len(pattern):
        return f"packet too short: {len(got) // 2} bytes, expected at least {len(pattern) // 2}"
    for i, ch in enumerate(pattern):
        if ch != "*" and ch != got[i]:
            return f"differs at nibble {i} (byte {i // 2}): expected {ch}, got {got[i]}"
    if exact_length and len(got) > len(pattern):
        return f"packet too long: {len(got) // 2} bytes, expected {len(pattern) // 2}"
    return None


def _bipartite(n_exp: int, n_got: int, ok: list[list[bool]]) -> list[int]:
    """Maximum matching expectations -> packets; returns packet index per expectation
    (-1 unmatched)."""
    owner = [-1] * n_got

    def augment(e: int, seen: list[bool]) -> bool:
        for g in range(n_got):
            if ok[e][g] and not seen[g]:
                seen[g] = True
                if owner[g] < 0 or augment(owner[g], seen):
                    owner[g] = e
                    return True
        return False

    for e in range(n_exp):
        augment(e, [False] * n_got)
    assign = [-1] * n_exp
    for g, e in enumerate(owner):
        if e >= 0:
            assign[e] = g
    return assign


class StfRunner:
    """Executes STF commands on one ``Switch`` and checks the expectations."""

    def __init__(self, switch: Any, path: str = "<stf>", ordered: bool = False) -> None:
        self.sw = switch
        self.model: ProgramModel = switch.model
        self.path = path
        self.ordered = ordered
        self.result = StfResult()
        self.expects: dict[int, list[StfCommand]] = {}
        self.any_ports: set[int] = set()
        self.named: dict[str, tuple[str, dict[str, Any], int | None]] = {}
        self.mc_nodes: dict[int, tuple[int, list[int]]] = {}  # handle -> (rid, ports)
        self.mc_groups: dict[int, list[int]] = {}  # group -> node handles

    # -- helpers
    def where(self, c: StfCommand, col: int | None = None) -> str:
        return f"{self.path}:{c.line}:{col if col is not None else c.col}"

    def _table(self, c: StfCommand) -> Table:
        names = [t.name for t in self.model.tables]
        return self.model.table(_suffix_lookup(names, c.table, "table", self.where(c)))

    def _extern(self, name: str, kinds: tuple[str, ...], c: StfCommand):
        names = [e.name for e in self.model.externs if e.kind in kinds]
        return self.model.extern(_suffix_lookup(names, name, "/".join(kinds), self.where(c)))

    def _action(self, table: Table, call: ActionCall, c: StfCommand,
                default: bool) -> tuple[str, dict[str, int]]:
        refs = [a.name for a in table.actions]
        name = _suffix_lookup(refs, call.name, f"action of table {table.name}",
                              self.where(c, call.col))
        action = self.model.action(name)
        widths = {p.name: p.bitwidth for p in action.params}
        params: dict[str, int] = {}
        for a in call.args:
            if a.name not in widths:
                raise P4Error(f"action {name} has no parameter {a.name!r}; it has: "
                              f"{', '.join(widths) or 'none'}", self.where(c, a.col))
            try:
                v = parse_int(a.value)
            except ValueError:
                raise P4Error(f"parameter {a.name}: {a.value!r} is not a number",
                              self.where(c, a.col)) from None
            if v >> widths[a.name]:
                raise P4Error(f"parameter {a.name}: {a.value} does not fit in "
                              f"{widths[a.name]} bits", self.where(c, a.col))
            params[a.name] = v
        missing = [p for p in widths if p not in params]
        if missing:
            raise P4Error(f"action {name} needs {', '.join(missing)}; write "
                          f"{call.name}({', '.join(p + ':VALUE' for p in widths)})",
                          self.where(c, call.col))
        return name, params

    def _match(self, table: Table, c: StfCommand) -> dict[str, Any]:  # noqa: C901 — one case per STF key syntax and match kind
        from p4target.runtime.entries import Exact, Lpm, Optional, Range, Ternary

        keys = {k.name: k for k in table.match_keys}
        aliases: dict[str, str] = {}
        for k in keys:
            if k.endswith(".isValid()"):
                base = k[: -len(".isValid()")]
                aliases[base + ".$valid$"] = k
                aliases[base + ".valid"] = k
        match: dict[str, Any] = {}
        for kv in c.keys:
            where = self.where(c, kv.col)
            # p4c's runner writes stack elements as name$N: hdr.extra$0.h = hdr.extra[0].h
            written = re.sub(r"\$([0-9]+)", r"[\1]", kv.name)
            wanted = aliases.get(written, written)
            kname = _suffix_lookup(list(keys) + list(aliases), wanted, f"key of table {table.name}", where)
            kname = aliases.get(kname, kname)
            kf = keys[kname]
            w = kf.bitwidth
            full = (1 << w) - 1
            text = kv.value
            try:
                if "->" in text:
                    lo_s, hi_s = text.split("->")
                    lo, hi = parse_int(lo_s), parse_int(hi_s)
                    self._fits(lo, w, kname, where)
                    self._fits(hi, w, kname, where)
                    if kf.match_kind != "range":
                        raise P4Error(f"key {kname} is {kf.match_kind}, not range; "
                                      "write a single value", where)
                    match[kname] = Range(lo, hi)
                    continue
                if "&&&" in text:
                    v_s, m_s = text.split("&&&")
                    v, m = parse_int(v_s), parse_int(m_s)
                elif "/" in text:
                    v_s, l_s = text.split("/")
                    v, _, _ = parse_wildcard(v_s)
                    plen = parse_int(l_s)
                    if plen > w:
                        raise P4Error(f"key {kname}: prefix length {plen} is longer than "
                                      f"the key ({w} bits)", where)
                    m = (full >> (w - plen)) << (w - plen) if plen else 0
                else:
                    v, m, nbits = parse_wildcard(text)
                    if m == -1:
                        m = full
                    elif kf.match_kind == "lpm" and "*" in text:
                        # LPM: the prefix ends where the '*' digits start
                        stars = nbits - bin(m).count("1")
                        m = full & ~((1 << stars) - 1) if stars < w else 0
                    elif "*" not in text and kf.match_kind != "ternary":
                        m = full
            except ValueError:
                raise P4Error(f"key {kname}: cannot read value {text!r}", where) from None
            self._fits(v, w, kname, where)
            m &= full
            v &= m if kf.match_kind in ("ternary", "lpm") else full
            kind = kf.match_kind
            if kind == "exact":
                if m != full:
                    raise P4Error(f"key {kname} is exact: wildcards are not allowed", where)
                match[kname] = Exact(v)
            elif kind == "lpm":
                plen = bin(m).count("1")
                if m != ((full >> (w - plen)) << (w - plen) if plen else 0):
                    raise P4Error(f"key {kname} is lpm: the mask must be a prefix", where)
                if plen:
                    match[kname] = Lpm(v, plen)
            elif kind == "ternary":
                if m:
                    match[kname] = Ternary(v, m)
            elif kind == "optional":
                if m == full:
                    match[kname] = Optional(v)
                elif m:
                    raise P4Error(f"key {kname} is optional: give a value or nothing", where)
            elif kind == "range":
                if m == full:
                    match[kname] = Range(v, v)
                elif m:
                    raise P4Error(f"key {kname} is range: write LOW->HIGH", where)
        for kname, kf in keys.items():
            if kname not in match and kf.match_kind == "exact":
                match[kname] = Exact(0)  # p4c's runner fills unwritten exact keys with 0
        return match

    @staticmethod
    def _fits(v: int, w: int, kname: str, where: str) -> None:
        if v >> w:
            raise P4Error(f"key {kname}: value {v:#x} does not fit in {w} bits", where)

    def _call(self, c: StfCommand, fn, *args, **kw):
        try:
            return fn(*args, **kw)
        except EntryError as e:
            raise P4Error(f"the switch refused {c.kind}: {e.message}", self.where(c)) from None

    # -- commands
    def execute(self, c: StfCommand) -> None:
        self.result.commands += 1
        handler = getattr(self, "_do_" + c.kind, None)
        if handler is None:
            handler = self._do_direct
        handler(c)

    def _do_add(self, c: StfCommand) -> None:
        table = self._table(c)
        if table.implementation:
            raise P4Error(f"table {table.name} uses action profile {table.implementation}; "
                          "STF cannot add its members", self.where(c))
        assert c.action is not None
        action, params = self._action(table, c.action, c, default=False)
        match = self._match(table, c)
        needs_prio = any(k.match_kind in ("ternary", "range", "optional") for k in table.match_keys)
        prio = None
        if needs_prio:
            # STF priorities start at 0 (p4c's tests use 0), P4Runtime's at 1: shift by
            # one, order unchanged. Without one, 1: among equals the first added wins.
            prio = c.priority + 1 if c.priority is not None else 1
        self._call(c, self.sw.table_add, table.name, match, action, params, priority=prio)
        if c.entry_name:
            self.named[c.entry_name] = (table.name, match, prio)

    def _do_setdefault(self, c: StfCommand) -> None:
        table = self._table(c)
        assert c.action is not None
        action, params = self._action(table, c.action, c, default=True)
        self._call(c, self.sw.table_set_default, table.name, action, params)

    def _do_remove_all(self, c: StfCommand) -> None:
        for t in self.model.tables:
            if t.const_entries is None:
                self._call(c, self.sw.table_clear, t.name)

    def _do_packet(self, c: StfCommand) -> None:
        self.result.packets_sent += 1
        outputs = self._call(c, self.sw.inject, c.port, c.data)
        for port, data in outputs:
            self.result.received.setdefault(port, []).append(bytes(data))
            log.debug("%s: out port %d: %s", self.where(c), port, bytes(data).hex())

    def _do_expect(self, c: StfCommand) -> None:
        if c.pattern is None:
            self.any_ports.add(c.port)
        else:
            self.expects.setdefault(c.port, []).append(c)

    def _do_wait(self, c: StfCommand) -> None:
        outputs = self.sw.run_until_idle()
        for port, data in outputs:
            self.result.received.setdefault(port, []).append(bytes(data))

    def _do_no_packet(self, c: StfCommand) -> None:
        pass

    def _check(self, c: StfCommand, what: str, got: int) -> None:
        ok = {"==": got == c.value, "!=": got != c.value, "<": got < c.value,
              "<=": got <= c.value, ">": got > c.value, ">=": got >= c.value}[c.op]
        msg = f"{self.where(c)}: {what} is {got}, expected {c.op} {c.value}"
        self.result.log.append(msg)
        if not ok:
            self.result.failures.append(msg)

    def _do_check_counter(self, c: StfCommand) -> None:
        ext = self._extern(c.name, ("counter", "direct_counter"), c)
        if c.index.startswith("$"):
            entry = self.named.get(c.index[1:])
            if entry is None:
                raise P4Error(f"no entry named {c.index[1:]!r}; name one with "
                              "'add ... = NAME' first", self.where(c))
            table, match, prio = entry
            pk, by = self._call(c, self.sw.direct_counter_read, table, match, prio)
        else:
            try:
                index = parse_int(c.index)
            except ValueError:
                raise P4Error(f"counter index {c.index!r} is not a number",
                              self.where(c)) from None
            if ext.kind == "direct_counter":
                raise P4Error(f"{ext.name} is a direct counter: name the entry, "
                              f"check_counter {c.name}($NAME)", self.where(c))
            pk, by = self._call(c, self.sw.counter_read, ext.name, index)
        if c.count_type == "bytes":
            self._check(c, f"{ext.name}({c.index}) bytes", by)
        else:
            self._check(c, f"{ext.name}({c.index}) packets", pk)

    def _do_check_register(self, c: StfCommand) -> None:
        ext = self._extern(c.name, ("register",), c)
        try:
            index = parse_int(c.index)
        except ValueError:
            raise P4Error(f"register index {c.index!r} is not a number", self.where(c)) from None
        self._check(c, f"{ext.name}[{index}]", self._call(c, self.sw.register_read, ext.name, index))

    def _mc_replicas(self, group: int) -> list[tuple[int, int]]:
        reps: list[tuple[int, int]] = []
        for h in self.mc_groups.get(group, []):
            rid, ports = self.mc_nodes[h]
            reps.extend((p, rid) for p in ports)
        return reps

    def _do_direct(self, c: StfCommand) -> None:  # noqa: C901 — one case per STF replication/queue command
        n = c.numbers
        sw = self.sw
        k = c.kind
        if k == "mc_mgrp_create":
            if n[0] in self.mc_groups:
                raise P4Error(f"multicast group {n[0]} exists already", self.where(c))
            self.mc_groups[n[0]] = []
        elif k in ("mc_node_create", "mc_node_update"):
            if k == "mc_node_create":
                handle = len(self.mc_nodes)
                self.mc_nodes[handle] = (n[0], list(n[1:]))
                self.result.log.append(f"{self.where(c)}: node handle {handle}")
            else:
                if n[0] not in self.mc_nodes:
                    raise P4Error(f"no multicast node handle {n[0]}", self.where(c))
                self.mc_nodes[n[0]] = (self.mc_nodes[n[0]][0], list(n[1:]))
                for g, hs in self.mc_groups.items():
                    if n[0] in hs:
                        self._call(c, sw.mc_group_set, g, self._mc_replicas(g))
        elif k == "mc_node_associate":
            g, h = n
            if g not in self.mc_groups:
                raise P4Error(f"multicast group {g} not created; write mc_mgrp_create {g} "
                              "first", self.where(c))
            if h not in self.mc_nodes:
                raise P4Error(f"no multicast node handle {h}; handles count from 0 in "
                              "mc_node_create order", self.where(c))
            self.mc_groups[g].append(h)
            self._call(c, sw.mc_group_set, g, self._mc_replicas(g))
        elif k == "mirroring_add":
            self._call(c, sw.clone_session_set, n[0], [(n[1], 0)])
        elif k == "mirroring_add_mc":
            self._call(c, sw.clone_session_set, n[0], self._mc_replicas(n[1]))
        elif k == "mirroring_delete":
            self._call(c, sw.clone_session_delete, n[0])
        elif k == "mirroring_get":
            self.result.log.append(f"{self.where(c)}: mirroring_get {n[0]}")
        elif k in ("counter_read", "counter_write"):
            ext = self._extern(c.name, ("counter",), c)
            if k == "counter_read":
                pk, by = self._call(c, sw.counter_read, ext.name, n[0])
                self.result.log.append(f"{self.where(c)}: {ext.name}[{n[0]}] = "
                                       f"(packets={pk}, bytes={by})")
            else:
                self._call(c, sw.counter_write, ext.name, n[0], n[1], n[2])
        elif k in ("register_read", "register_write", "register_reset"):
            ext = self._extern(c.name, ("register",), c)
            if k == "register_read":
                v = self._call(c, sw.register_read, ext.name, n[0])
                self.result.log.append(f"{self.where(c)}: {ext.name}[{n[0]}] = {v}")
            elif k == "register_write":
                self._call(c, sw.register_write, ext.name, n[0], n[1])
            else:
                for i in range(ext.size):
                    self._call(c, sw.register_write, ext.name, i, 0)
        elif k in ("meter_set_rates", "meter_array_set_rates", "meter_get_rates"):
            ext = self._extern(c.name, ("meter",), c)
            if k == "meter_get_rates":
                self.result.log.append(f"{self.where(c)}: meter_get_rates {ext.name} {n[0]}")
                return
            if len(c.rates) != 2:
                raise P4Error("meters take two RATE:BURST pairs (committed, peak)",
                              self.where(c))
            (cr, cb), (pr, pb) = c.rates
            indexes = [n[0]] if k == "meter_set_rates" else list(range(ext.size))
            for i in indexes:
                # simple_switch_CLI rates are per microsecond; the Switch takes per second
                self._call(c, sw.meter_set, ext.name, i, cr * 1e6, cb, pr * 1e6, pb)
        else:  # pragma: no cover - parse_stf_text rejects unknown commands
            raise P4Error(f"unknown command {k}", self.where(c))

    # -- checking
    def finish(self) -> StfResult:
        res = self.result
        for port in sorted(set(res.received) | set(self.expects)):
            got = res.received.get(port, [])
            exp = self.expects.get(port, [])
            if port in self.any_ports:
                continue
            if len(got) != len(exp):
                lines = [f"port {port}: expected {len(exp)} packet(s), received {len(got)}"]
                lines += [f"  expected {e.pattern}{'$' if e.exact_length else ''} "
                          f"({self.where(e)})" for e in exp]
                lines += [f"  received {g.hex().upper()}" for g in got]
                res.failures.append("\n".join(lines))
                continue
            if self.ordered:
                for e, g in zip(exp, got, strict=False):
                    why = match_pattern(e.pattern or "", e.exact_length, g)
                    if why:
                        res.failures.append(f"{self.where(e)}: port {port}: {why}\n"
                                            f"  expected {e.pattern}\n  received {g.hex().upper()}")
                continue
            ok = [[match_pattern(e.pattern or "", e.exact_length, g) is None for g in got]
                  for e in exp]
            assign = _bipartite(len(exp), len(got), ok)
            used = {g for g in assign if g >= 0}
            for ei, gi in enumerate(assign):
                if gi >= 0:
                    continue
                e = exp[ei]
                unmatched = [g for i, g in enumerate(got) if i not in used]
                detail = "; ".join(
                    f"{match_pattern(e.pattern or '', e.exact_length, g)}" for g in unmatched[:3])
                res.failures.append(
                    f"{self.where(e)}: port {port}: no received packet matches {e.pattern}"
                    f" ({detail})\n" + "\n".join(f"  received {g.hex().upper()}" for g in unmatched))
        return res


def run_stf(switch: Any, stf_path: Path | str, ordered: bool = False) -> StfResult:
    """Run an STF file on ``switch`` (a ``p4target.Switch``). Problems in the file
    raise ``P4Error``; unmet expectations are listed in ``result.failures``."""
    cmds = parse_stf_file(stf_path)
    runner = StfRunner(switch, str(stf_path), ordered=ordered)
    for c in cmds:
        runner.execute(c)
    return runner.finish()


def run_stf_program(program: Path | str, stf_path: Path | str, ordered: bool = False,
                    seed: int = 0, include_dirs: tuple[Path, ...] = ()) -> StfResult:
    """Compile ``program``, load it in a fresh switch and run the STF file on it."""
    from p4target import Switch

    cmds = parse_stf_file(stf_path)  # report STF syntax errors before compiling
    sw = Switch.load(program, seed=seed)
    runner = StfRunner(sw, str(stf_path), ordered=ordered)
    for c in cmds:
        runner.execute(c)
    return runner.finish()
