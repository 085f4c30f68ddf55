"""The compiled form of an expression (``V``), shared by every part of the compilers.

A leaf module (it imports only the types and the scope's symbols), so that the
compiler context and the expression, statement and fast-path compilers all name
``V`` without importing one another.
"""

from __future__ import annotations

from dataclasses import dataclass

from p4target.compiler.scope import Sym
from p4target.compiler.types import Type


@dataclass
class V:
    """A compiled expression: Python code, P4 type, compile-time value (or None)."""

    code: str
    type: Type
    const: int | bool | str | None = None  # str: a compile-time string (an error or enum member name)
    sym: Sym | None = None  # set when the expression names a non-value object
    # fast path only: the place in the packet state this names, e.g. ("hdr", "ipv6")
    path: tuple[str, ...] | None = None


def lit(value: int | bool, t: Type) -> V:
    """A constant of type ``t``."""
    return V(repr(value), t, value)
