"""A small C-style preprocessor for P4 sources.

p4c runs the C preprocessor before parsing; the project's programs use #include,
object-like #define constants and conditional compilation, so that is what this does.
The output keeps, for every line, the file and line it came from, so later errors point
at the user's source and not at an expanded buffer.
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
_MAX_INCLUDE_DEPTH = 64


@dataclass(frozen=True, slots=True)
class SourceLine:
    """One line of preprocessed text and where it came from."""

    text: str
    file: str
    line: int


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
        self.macros: dict[str, str] = {k: str(v) for k, v in (defines or {}).items()}
        self.lines: list[SourceLine] = []

    def run(self, path: Path) -> list[SourceLine]:
        self._file(Path(path), Loc(str(path), 0, 0), 0)
        return self.lines

    # -- files ----------------------------------------------------------------
    def _file(self, path: Path, where: Loc, depth: int) -> None:
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
                    self.lines.append(SourceLine(self._expand(line), fname, lineno))
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
        rest = self._expand(rest).strip()
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
        if body.startswith("("):
            raise unsupported(loc, f"function-like macro {name}",
                              "use an object-like #define or a P4 const/function")
        self.macros[name] = body.strip()

    def _expand(self, text: str, seen: frozenset[str] = frozenset()) -> str:
        if not self.macros or "#" in text and text.lstrip().startswith("#"):
            return text

        def repl(m: re.Match[str]) -> str:
            w = m.group(0)
            if w in self.macros and w not in seen:
                return self._expand(self.macros[w], seen | {w})
            return w

        return _sub_outside_strings(text, repl)

    def _eval(self, expr: str, loc: Loc) -> bool:
        expr = re.sub(r"defined\s*\(\s*([A-Za-z_]\w*)\s*\)|defined\s+([A-Za-z_]\w*)",
                      lambda m: "1" if (m.group(1) or m.group(2)) in self.macros else "0", expr)
        expr = self._expand(expr)
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
            return bool(eval("".join(out), {"__builtins__": {}}, {}))  # noqa: S307 - tokens checked above
        except Exception:  # noqa: BLE001 - any failure is a bad directive
            raise error(loc, f"cannot evaluate #if expression {expr!r}") from None


def _sub_outside_strings(text: str, repl) -> str:  # type: ignore[no-untyped-def]
    parts = text.split('"')
    for k in range(0, len(parts), 2):
        parts[k] = _IDENT.sub(repl, parts[k])
    return '"'.join(parts)


def preprocess(path: Path, include_dirs: tuple[Path, ...] = (),
               defines: dict[str, str] | None = None) -> list[SourceLine]:
    return Preprocessor(include_dirs, defines).run(Path(path))
