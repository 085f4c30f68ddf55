"""The expressions of a program compiler: each P4 expression type-checked into a typed
expression (typecheck_expr.py, ``ExprChecker``), then written as Python code by a
generator (emit_expr.py, ``ExprEmitter``, whose places the fast path writes with
its ``FastPlaceCode``).

``ExpressionCompiler`` is what the other parts call (through ``ctx`` or directly):
``expr``, ``value``, ``const_int``, ``expr_as``, ``coerce`` and ``flatten_bits``,
each a check then an emission, and ``type_of``, a check only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from p4target.compiler.emit_expr import ExprEmitter, PlaceWriter, to_type_const
from p4target.compiler.typecheck_expr import ExprChecker, expr_text
from p4target.compiler.types import ExternT, Type, VarbitT
from p4target.compiler.values import V, lit
from p4target.frontend import ast as A
from p4target.frontend.source import Loc

if TYPE_CHECKING:
    from p4target.compiler.context import CompilerContext


class ExpressionCompiler:
    """The expressions of the program compiler ``ctx``: ``checker`` types and checks
    them, ``emitter`` writes their code, its places as ``places`` writes them (the
    general path's ``PlaceCode`` when none is given; the fast path gives its own).
    The statements an expression needs before it (a call's copy-out, a temporary)
    are nodes the emitter writes with it; a call is checked by the call checker
    (``ctx.check_call``) and written by the call generator (``ctx.call_value``)."""

    def __init__(self, ctx: CompilerContext, places: PlaceWriter | None = None) -> None:
        self.ctx = ctx
        self.emitter = ExprEmitter(ctx, places)
        self.checker = ExprChecker(ctx, self.emitter)

    def expr(self, e: A.Expr) -> V:
        return self.emitter.emit(self.checker.check(e))

    def value(self, e: A.Expr) -> V:
        """An expression that must be a value (not a table, extern, type...)."""
        return self.emitter.emit(self.checker.check_value(e))

    def const_int(self, e: A.Expr, what: str = "value") -> int:
        return self.checker.const_int(e, what)

    def type_of(self, e: A.Expr) -> Type:
        """The type of the value ``e``, checked (its code is not written)."""
        return self.checker.check_value(e).type

    def expr_as(self, e: A.Expr, t: Type, what: str = "value") -> str:
        """Code for ``e`` converted implicitly to ``t`` (assignment, argument passing)."""
        return self.emitter.emit(self.checker.check_as(e, t, what)).code

    def coerce(self, v: V, t: Type, loc: Loc, what: str = "value") -> str:
        """Code for the compiled value ``v`` converted implicitly to ``t``."""
        how = self.checker.conversion(v.type, v.const, t, loc, what)
        return repr(how) if isinstance(how, int) else self.emitter.convert(v, t, how)

    def flatten_bits(self, e: A.Expr) -> tuple[str, int | str, list[tuple[str, int | str]]]:
        """A list/struct/header/value as one bit string: ``(code, width, parts)``."""
        return self.emitter.flatten_bits(self.checker.bits.check(e))


__all__ = ["ExpressionCompiler", "V", "expr_text", "lit", "to_type_const", "ExternT", "VarbitT"]
