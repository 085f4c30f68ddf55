"""Source positions shared by the preprocessor, lexer, parser and compiler.

Every token and AST node carries a ``Loc`` so that any error, however late, names the
place in the user's file that caused it.
"""

from __future__ import annotations

from dataclasses import dataclass

from p4target.errors import P4Error, UnsupportedError


@dataclass(frozen=True, slots=True)
class Loc:
    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


NOWHERE = Loc("<builtin>", 0, 0)


def error(loc: Loc, message: str) -> P4Error:
    """A P4Error for bad input at ``loc``; callers ``raise`` it."""
    return P4Error(message, str(loc))


def unsupported(loc: Loc, construct: str, fix: str) -> UnsupportedError:
    """The one message format for valid P4 the embedded target does not implement."""
    return UnsupportedError(
        f"{construct} is not supported by the embedded target; {fix}", str(loc)
    )
