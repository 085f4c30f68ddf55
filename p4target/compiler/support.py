"""Helpers the generated pipeline code imports.

Kept as a real module (not pasted into every generated program) so the helpers are
compiled once and readable in tracebacks. Everything here is on the per-packet path,
so it stays small and allocation-light.
"""

from __future__ import annotations


class ParserError(Exception):
    """Raised by generated parser states; ``pos`` is the byte offset parsing stopped at."""

    __slots__ = ("code", "pos")

    def __init__(self, code: int, pos: int) -> None:
        self.code = code
        self.pos = pos


class ExitControl(Exception):
    """``exit;``: leaves the current control (v1model then runs the next block)."""


class Stack:
    """A header stack: fixed list of header objects plus ``nxt`` (P4's nextIndex)."""

    __slots__ = ("h", "nxt", "n", "cls")

    def __init__(self, cls: type, n: int) -> None:
        self.cls = cls
        self.n = n
        self.h = [cls() for _ in range(n)]
        self.nxt = 0

    @staticmethod
    def of(cls: type, elems: list[object]) -> "Stack":
        """A stack holding ``elems`` (``lookahead`` of a struct with a stack), nextIndex 0."""
        s = Stack.__new__(Stack)
        s.cls, s.n, s.h, s.nxt = cls, len(elems), elems, 0
        return s

    def at(self, i: int) -> object:
        """Element ``i``, or a scratch header (reads 0, writes vanish) when out of range."""
        if 0 <= i < self.n:
            return self.h[i]
        return self.cls()

    def last_in_parser(self, pos: int, code: int) -> object:
        """``stack.last`` in a parser: StackOutOfBounds when nothing was extracted yet."""
        if self.nxt == 0:
            raise ParserError(code, pos)
        return self.h[self.nxt - 1]

    def copy(self) -> "Stack":
        s = Stack.__new__(Stack)
        s.cls = self.cls
        s.n = self.n
        s.h = [e.copy() for e in self.h]
        s.nxt = self.nxt
        return s

    def push_front(self, k: int) -> None:
        h, n = self.h, self.n
        for i in range(n - 1, -1, -1):
            h[i] = h[i - k] if i >= k else self.cls()
        self.nxt = min(self.nxt + k, n)

    def pop_front(self, k: int) -> None:
        h, n = self.h, self.n
        for i in range(n):
            h[i] = h[i + k] if i + k < n else self.cls()
        self.nxt = max(self.nxt - k, 0)

    def any_valid(self) -> bool:
        return any(e._v for e in self.h)


def div(a: int, b: int) -> int:
    """Unsigned division; division by zero gives 0 instead of crashing the switch."""
    return a // b if b else 0


def mod(a: int, b: int) -> int:
    return a % b if b else 0


def shl(a: int, b: int, width: int) -> int:
    """``a << b`` truncated to ``width`` bits without building huge integers."""
    if b >= width:
        return 0
    return (a << b) & ((1 << width) - 1)


def lookahead(data: bytes, pos: int, nbytes: int, drop: int, too_short: int) -> int:
    """The next ``nbytes*8 - drop`` bits without consuming them (parser ``lookahead``)."""
    end = pos + nbytes
    if end > len(data):
        raise ParserError(too_short, pos)
    return int.from_bytes(data[pos:end], "big") >> drop


EXIT = ExitControl()
