"""The generator of calls: Python code for a typed call (``ir_call.Call``, made by
typecheck_call.py), emitted through the program compiler.

It only writes code: the callee was resolved and every argument checked before. Its
expressions are written by the expression generator (emit_expr.py, whose places the
fast path writes its own way); the fast path's ``FastCallEmitter``
(fast_calls.py) writes a header's validity as the packet state's locals.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from p4target.compiler import ir_call
from p4target.compiler.naming import pyfield
from p4target.compiler.types import BoolT, StructT, VoidT
from p4target.compiler.values import V

if TYPE_CHECKING:
    from p4target.compiler.context import CompilerContext
    from p4target.compiler.emit_expr import ExprEmitter


class CallEmitter:
    """Python code for the typed calls of the program compiler ``ctx``, their
    expressions written by ``exprs``. ``emit`` gives the call's value (its code and
    type), or None when nothing is left to run; the statements it needs before are
    emitted then."""

    def __init__(self, ctx: CompilerContext, exprs: ExprEmitter) -> None:
        self.ctx = ctx
        self.exprs = exprs
        self._by_kind: dict[type, Callable[[Any], V | None]] = {  # each method takes its own node class
            ir_call.IsValid: self.is_valid, ir_call.SetValidity: self.set_validity,
            ir_call.StackShift: self.stack_shift, ir_call.Compiled: self.compiled,
        }

    def emit(self, node: ir_call.Call) -> V | None:
        return self._by_kind[type(node)](node)

    @staticmethod
    def compiled(node: ir_call.Compiled) -> V | None:
        return node.value

    # ------------------------------------------------------------------ headers, stacks
    def is_valid(self, node: ir_call.IsValid) -> V | None:
        return self.valid_code(node, self.exprs.emit(node.base))

    def valid_code(self, node: ir_call.IsValid, base: V) -> V | None:
        """A header's validity flag; a union's: whether one of its members is valid."""
        if node.header.kind == "header_union":
            return V("(" + " or ".join(f"{base.code}.{pyfield(n)}._v" for n, _ in node.header.fields) + ")",
                     BoolT())
        return V(f"{base.code}._v", BoolT())

    def set_validity(self, node: ir_call.SetValidity) -> V | None:
        return self.write_validity(node, self.exprs.emit(node.base))

    def write_validity(self, node: ir_call.SetValidity, base: V) -> V | None:
        """simple_switch's add_header for ``setValid``: an invalid header becomes valid
        with all fields 0; a valid one is left as it is; a union's other members
        become invalid first."""
        if not node.valid:
            return V(f"{base.code}._v = False", VoidT())
        if node.parent is not None:
            parent = self.exprs.emit(node.parent)
            if isinstance(parent.type, StructT) and parent.type.kind == "header_union":
                for n, _ in parent.type.fields:
                    if n != node.member:
                        self.ctx.emit(f"{parent.code}.{pyfield(n)}._v = False")
        return V(f"{base.code}.set_valid()", VoidT())

    def stack_shift(self, node: ir_call.StackShift) -> V | None:
        return V(f"{self.exprs.emit(node.base).code}.{node.method}({node.count})", VoidT())
