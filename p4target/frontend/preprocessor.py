"""A small C-style preprocessor for P4 sources.

p4c runs the C preprocessor before parsing. This one does #include, conditional
compilation (#if/#ifdef/#ifndef/#elif/#else/#endif with defined()), #define/#undef of
object-like and function-like macros (nested parentheses in arguments, variadic
``...``/``__VA_ARGS__``, rescanning with C's rule that a macro is not expanded inside
its own expansion) and #error. The ``#`` and ``##`` operators are refused with a clear
error. The output keeps, for every line, the file and line it came from, so later
errors point at the user's source and not at an expanded buffer; a macro call whose
arguments span lines is expanded on its first line. Why not pcpp (a pure-Python C99
preprocessor on PyPI): docs/target.md, "Preprocessor".
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path

from p4target.frontend.source import Loc, error, unsupported

log = logging.getLogger(__name__)

BUILTIN_INCLUDE = Path(__file__).resolve().parent.parent / "include"

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DIRECTIVE = re.compile(r"^\s*#\s*([A-Za-z_]+)?(.*)$")
# Preprocessing tokens: strings, identifiers, numbers (digits and word characters, so
# 8w255 and 0x1F stay whole; no dots, so 1..MAX is 1, '..', MAX), spaces, any other char.
_PP_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"?|[A-Za-z_]\w*|\d\w*|\s+|.')
_MAX_INCLUDE_DEPTH = 64
_MAX_JOINED_LINES = 256  # lines one macro call's arguments may span


@dataclass(frozen=True, slots=True)
class Macro:
    """A #define: ``params`` is None for an object-like macro, else the parameter
    names (``__VA_ARGS__`` last for ``...``)."""

    body: str
    params: tuple[str, ...] | None = None

    @property
    def variadic(self) -> bool:
        return bool(self.params) and self.params[-1] == "__VA_ARGS__"  # type: ignore[index]  # params is set (checked first)


@dataclass(frozen=True, slots=True)
class _Tok:
    """A preprocessing token; ``hide`` holds the macros it came out of (not expanded
    again inside them), ``col`` its column in the source line (0: from a macro body),
    ``at`` the source column it is reported at (its own, or the macro call's)."""

    text: str
    hide: frozenset[str] = frozenset()
    col: int = 0
    at: int = 0

    @property
    def is_ident(self) -> bool:
        return self.text[0].isalpha() or self.text[0] == "_"


@dataclass(frozen=True, slots=True)
class SourceLine:
    """One line of preprocessed text and where it came from. ``cols`` gives, when a
    macro was expanded on the line, the source column of each character of ``text``
    (text from a macro body is reported at the macro's name); empty: the text is the
    source line itself."""

    text: str
    file: str
    line: int
    cols: tuple[int, ...] = ()


def strip_comments(text: str, file: str) -> str:
    """Replace comments by spaces, keeping newlines so line/column numbers survive."""
    out: list[str] = []
    i, n = 0, len(text)
    line = 1
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"' and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                raise error(Loc(file, line, 1), "unterminated /* comment; close it with */")
            chunk = text[i : j + 2]
            out.append("".join("\n" if ch == "\n" else " " for ch in chunk))
            line += chunk.count("\n")
            i = j + 2
        else:
            if c == "\n":
                line += 1
            out.append(c)
            i += 1
    return "".join(out)


class Preprocessor:
    """Expands one main file into a list of ``SourceLine``."""

    def __init__(self, include_dirs: tuple[Path, ...] = (), defines: dict[str, str] | None = None):
        self.include_dirs = tuple(Path(d) for d in include_dirs)
        self.macros: dict[str, Macro] = {k: Macro(str(v)) for k, v in (defines or {}).items()}
        self.lines: list[SourceLine] = []

    def run(self, path: Path) -> list[SourceLine]:
        self._file(Path(path), Loc(str(path), 0, 0), 0)
        return self.lines

    # -- files ----------------------------------------------------------------
    def _file(self, path: Path, where: Loc, depth: int) -> None:  # noqa: C901 — one case per preprocessor directive
        if depth > _MAX_INCLUDE_DEPTH:
            raise error(where, f"#include nested deeper than {_MAX_INCLUDE_DEPTH}; "
                        "look for a file that includes itself without a guard")
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise error(where, f"cannot read {path}: {exc}; check the path") from None
        fname = str(path)
        text = text.replace("\r\n", "\n")  # files written on Windows
        raw = strip_comments(text, fname).split("\n")
        # (active_now, some_branch_taken, parent_active, else_seen)
        stack: list[list[bool]] = []
        active = True
        i = 0
        while i < len(raw):
            lineno = i + 1
            line = raw[i]
            while line.endswith("\\") and i + 1 < len(raw):
                i += 1
                line = line[:-1] + " " + raw[i]
                self.lines.append(SourceLine("", fname, lineno))  # keep numbering
            i += 1
            m = _DIRECTIVE.match(line)
            if not m:
                if active:
                    # a macro call whose arguments go on: join the lines it spans
                    joined = 0
                    while (self._open_call(line) and i < len(raw) and joined < _MAX_JOINED_LINES
                           and not _DIRECTIVE.match(raw[i])):
                        line = line + " " + raw[i]
                        i += 1
                        joined += 1
                    text, cols = self._expand_line(line, Loc(fname, lineno, 1))
                    self.lines.append(SourceLine(text, fname, lineno, cols))
                    self.lines.extend(SourceLine("", fname, lineno + k) for k in range(1, joined + 1))
                else:
                    self.lines.append(SourceLine("", fname, lineno))
                continue
            self.lines.append(SourceLine("", fname, lineno))
            name = m.group(1) or ""
            rest = m.group(2).strip()
            loc = Loc(fname, lineno, line.index("#") + 1)
            if name in ("if", "ifdef", "ifndef"):
                if name == "if":
                    cond = self._eval(rest, loc) if active else False
                elif name == "ifdef":
                    cond = self._name(rest, loc) in self.macros
                else:
                    cond = self._name(rest, loc) not in self.macros
                stack.append([active and cond, active and cond, active, False])
                active = active and cond
            elif name == "elif":
                if not stack or stack[-1][3]:
                    raise error(loc, "#elif without #if; remove it or add the #if")
                frame = stack[-1]
                cond = (not frame[1]) and frame[2] and self._eval(rest, loc)
                frame[0] = cond
                frame[1] = frame[1] or cond
                active = cond
            elif name == "else":
                if not stack or stack[-1][3]:
                    raise error(loc, "#else without #if; remove it or add the #if")
                frame = stack[-1]
                frame[3] = True
                frame[0] = frame[2] and not frame[1]
                frame[1] = True
                active = frame[0]
            elif name == "endif":
                if not stack:
                    raise error(loc, "#endif without #if; remove it")
                frame = stack.pop()
                active = frame[2]
            elif not active:
                continue
            elif name == "define":
                self._define(rest, loc)
            elif name == "undef":
                self.macros.pop(self._name(rest, loc), None)
            elif name == "include":
                self._include(rest, path, loc, depth)
            elif name == "error":
                raise error(loc, f"#error {rest}")
            elif name in ("pragma", "line", "warning", ""):
                continue
            else:
                raise unsupported(loc, f"the #{name} directive", "use #include, #define, #if/#ifdef")
        if stack:
            raise error(Loc(fname, len(raw), 1), "missing #endif at end of file; close every #if")

    def _include(self, rest: str, cur: Path, loc: Loc, depth: int) -> None:
        rest = self._expand(rest, loc).strip()
        if len(rest) >= 2 and rest[0] == '"' and rest.endswith('"'):
            name, bracket = rest[1:-1], False
        elif len(rest) >= 2 and rest[0] == "<" and rest.endswith(">"):
            name, bracket = rest[1:-1], True
        else:
            raise error(loc, f"#include expects \"file\" or <file>, got {rest!r}")
        candidates: list[Path] = []
        if not bracket:
            candidates.append(cur.parent / name)
        candidates.extend(d / name for d in self.include_dirs)
        candidates.append(BUILTIN_INCLUDE / name)
        for c in candidates:
            if c.is_file():
                self._file(c, loc, depth + 1)
                return
        raise error(loc, f"cannot find include file {name!r}; searched "
                    + ", ".join(str(c.parent) for c in candidates) + "; add -I/include_dirs")

    # -- macros -----------------------------------------------------------------
    def _name(self, rest: str, loc: Loc) -> str:
        m = _IDENT.match(rest.strip())
        if not m:
            raise error(loc, f"expected a macro name, got {rest!r}")
        return m.group(0)

    def _define(self, rest: str, loc: Loc) -> None:
        m = _IDENT.match(rest)
        if not m:
            raise error(loc, f"#define expects a name, got {rest!r}")
        name = m.group(0)
        body = rest[m.end():]
        if not body.startswith("("):  # a space before '(' makes it object-like, as in C
            self.macros[name] = Macro(body.strip())
            return
        close = body.find(")")
        if close < 0:
            raise error(loc, f"#define {name}(: missing ')' after the parameter names")
        names = [p.strip() for p in body[1:close].split(",")]
        if names == [""]:
            names = []
        params: list[str] = []
        for k, p in enumerate(names):
            if p == "..." and k == len(names) - 1:
                p = "__VA_ARGS__"
            elif not _IDENT.fullmatch(p) or p == "__VA_ARGS__":
                raise error(loc, f"#define {name}(...): parameter {p!r} is not a name; write "
                            "identifiers separated by commas (and ... last)")
            if p in params:
                raise error(loc, f"#define {name}(...): parameter '{p}' appears twice")
            params.append(p)
        text = body[close + 1:].strip()
        if any(t.text == "#" for t in _tokens(text)):
            raise unsupported(loc, f"the # or ## operator (in macro {name})",
                              "write the text out without them")
        self.macros[name] = Macro(text, tuple(params))

    def _open_call(self, line: str) -> bool:
        """True when ``line`` ends inside the argument list of a function-like macro."""
        if "(" not in line or not any(self.macros.get(w, _OBJ).params is not None
                                      for w in _IDENT.findall(line)):
            return False
        toks = [t for t in _tokens(line) if not t.text.isspace()]
        for k, t in enumerate(toks):
            mac = self.macros.get(t.text)
            if mac is None or mac.params is None or k + 1 >= len(toks) or toks[k + 1].text != "(":
                continue
            depth = 0
            for u in toks[k + 1:]:
                depth += (u.text == "(") - (u.text == ")")
                if depth == 0:
                    break
            if depth > 0:
                return True
        return False

    def _expand(self, text: str, loc: Loc) -> str:
        """``text`` with every macro expanded (C's rescanning and hide sets)."""
        return self._expand_line(text, loc)[0]

    def _expand_line(self, text: str, loc: Loc) -> tuple[str, tuple[int, ...]]:
        """The expanded text and the source column of each of its characters (empty
        when nothing was expanded)."""
        if not any(w in self.macros for w in _IDENT.findall(text)):
            return text, ()
        out = self._expand_tokens(_tokens(text), loc)
        cols: list[int] = []
        for t in out:
            cols.extend(range(t.col, t.col + len(t.text)) if t.col else [t.at] * len(t.text))
        return "".join(t.text for t in out), tuple(cols)

    def _expand_tokens(self, toks: list[_Tok], loc: Loc) -> list[_Tok]:
        out: list[_Tok] = []
        i = 0
        while i < len(toks):
            t = toks[i]
            mac = self.macros.get(t.text) if t.is_ident else None
            if mac is None or t.text in t.hide:
                out.append(t)
                i += 1
                continue
            hide = t.hide | {t.text}
            if mac.params is None:
                repl = [_Tok(u.text, hide, 0, t.at) for u in _tokens(mac.body)]
                toks = repl + toks[i + 1:]
                i = 0
                continue
            j = i + 1
            while j < len(toks) and toks[j].text.isspace():
                j += 1
            if j >= len(toks) or toks[j].text != "(":
                out.append(t)  # a function-like macro's name without '(' is not a call
                i += 1
                continue
            where = Loc(loc.file, loc.line, t.at) if t.at else loc
            args, end = _call_args(toks, j, t.text, where)
            body = self._substitute(t.text, mac, args, where)
            toks = [_Tok(u.text, hide | u.hide, u.col, u.at or t.at) for u in body] + toks[end + 1:]
            i = 0
        return out

    def _substitute(self, name: str, mac: Macro, args: list[list[_Tok]], where: Loc) -> list[_Tok]:
        params = mac.params or ()
        if not params and len(args) == 1 and all(a.text.isspace() for a in args[0]):
            args = []
        if mac.variadic and len(args) >= len(params) - 1:
            fixed = len(params) - 1
            rest = args[fixed:]
            va: list[_Tok] = []
            for k, a in enumerate(rest):
                va.extend(([_Tok(", ")] if k else []) + a)
            args = args[:fixed] + [va]
        if len(args) != len(params):
            shown = ", ".join(params).replace("__VA_ARGS__", "...")
            raise error(where, f"macro {name}({shown}) takes {len(params)} argument(s), got "
                        f"{len(args)}; pass one per parameter (parenthesize commas inside one)")
        # arguments are fully expanded before they replace the parameters (C 6.10.3.1)
        value = {p: self._expand_tokens(list(arg), where)
                 for p, arg in zip(params, args, strict=False)}
        out: list[_Tok] = []
        for u in _tokens(mac.body):
            out.extend(value[u.text] if u.text in value else [_Tok(u.text)])  # body text: no column
        return out

    def _eval(self, expr: str, loc: Loc) -> bool:
        expr = re.sub(r"defined\s*\(\s*([A-Za-z_]\w*)\s*\)|defined\s+([A-Za-z_]\w*)",
                      lambda m: "1" if (m.group(1) or m.group(2)) in self.macros else "0", expr)
        expr = self._expand(expr, loc)
        toks = re.findall(r"0[xX][0-9a-fA-F]+|\d+|[A-Za-z_]\w*|&&|\|\||==|!=|<=|>=|<<|>>|\S", expr)
        out: list[str] = []
        for t in toks:
            if t[0].isdigit():
                out.append(str(int(t.rstrip("uUlL"), 0)) if not t.startswith("0") or t == "0"
                           or t[:2].lower() == "0x" else str(int(t, 8)))
            elif t[0].isalpha() or t[0] == "_":
                out.append("0")  # undefined identifiers are 0, as in C
            elif t == "&&":
                out.append(" and ")
            elif t == "||":
                out.append(" or ")
            elif t == "!":
                out.append(" not ")
            elif t in ("==", "!=", "<=", ">=", "<<", ">>", "<", ">", "+", "-", "*", "/", "%",
                       "(", ")", "&", "|", "^", "~"):
                out.append(t.replace("/", "//"))
            else:
                raise error(loc, f"cannot evaluate #if expression {expr!r}; use integers, "
                            "defined(), comparisons and && || !")
        try:
            return bool(eval("".join(out), {"__builtins__": {}}, {}))  # tokens checked above
        except Exception:  # any failure is a bad directive
            raise error(loc, f"cannot evaluate #if expression {expr!r}") from None


_OBJ = Macro("")


def _tokens(text: str) -> list[_Tok]:
    """Preprocessing tokens of one line, with their 1-based columns."""
    return [_Tok(m.group(0), frozenset(), m.start() + 1, m.start() + 1) for m in _PP_TOKEN.finditer(text)]


def _call_args(toks: list[_Tok], open_at: int, name: str, where: Loc) -> tuple[list[list[_Tok]], int]:
    """The arguments of a macro call whose '(' is ``toks[open_at]``, split at commas
    outside nested parentheses, and the index of the closing ')'."""
    args: list[list[_Tok]] = [[]]
    depth = 0
    for k in range(open_at + 1, len(toks)):
        x = toks[k].text
        if x == "(":
            depth += 1
        elif x == ")":
            if depth == 0:
                return [_strip(a) for a in args], k
            depth -= 1
        elif x == "," and depth == 0:
            args.append([])
            continue
        args[-1].append(toks[k])
    raise error(where, f"unterminated argument list of macro {name}; close it with ')'")


def _strip(arg: list[_Tok]) -> list[_Tok]:
    """An argument without its leading and trailing spaces."""
    lo, hi = 0, len(arg)
    while lo < hi and arg[lo].text.isspace():
        lo += 1
    while hi > lo and arg[hi - 1].text.isspace():
        hi -= 1
    return arg[lo:hi]


def preprocess(path: Path, include_dirs: tuple[Path, ...] = (),
               defines: dict[str, str] | None = None) -> list[SourceLine]:
    return Preprocessor(include_dirs, defines).run(Path(path))
