"""The generator of calls: Python code for a typed call (``ir.Call``, made by
typecheck_call.py), emitted through the program compiler.

It only writes code: the callee was resolved and every argument checked before. Its
expressions are written by the expression generator (emit_expr.py, whose places the
fast path writes its own way); the fast path's ``FastCallEmitter``
(fast_calls.py) writes a header's validity as the packet state's locals.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from p4target.compiler import ir
from p4target.compiler.emit_stmt import fresh_value
from p4target.compiler.naming import pyfield
from p4target.compiler.scope import Sym
from p4target.compiler.types import BoolT, StructT, VoidT
from p4target.compiler.values import V

if TYPE_CHECKING:
    from p4target.compiler.context import CompilerContext
    from p4target.compiler.emit_expr import ExprEmitter


class Stores(Protocol):
    """Who writes a value into a place (the statement compiler, whose stores the fast
    path writes its own way)."""

    def store_node(self, target: ir.Expr, code: str) -> None: ...


def invalidate_siblings(ctx: CompilerContext, parent: V, member: str) -> None:
    """When ``parent`` is a header union, its members other than ``member`` become
    invalid (one of them is made valid)."""
    if isinstance(parent.type, StructT) and parent.type.kind == "header_union":
        for n, _ in parent.type.fields:
            if n != member:
                ctx.emit(f"{parent.code}.{pyfield(n)}._v = False")


class CallEmitter:
    """Python code for the typed calls of the program compiler ``ctx``, their
    expressions written by ``exprs``, the results copied out through ``stores``.
    ``emit`` gives the call's value (its code and type), or None when nothing is
    left to run; the statements it needs before are emitted then."""

    def __init__(self, ctx: CompilerContext, exprs: ExprEmitter, stores: Stores) -> None:
        self.ctx = ctx
        self.exprs = exprs
        self.stores = stores
        self._by_kind: dict[type, Callable[[Any], V | None]] = {  # each method takes its own node class
            ir.IsValid: self.is_valid, ir.SetValidity: self.set_validity,
            ir.StackShift: self.stack_shift, ir.TableApply: self.table_apply,
            ir.ActionCall: self.action_call,
            ir.Extract: self.ctx.packet_call, ir.SkipHeader: self.ctx.packet_call,
            ir.Advance: self.ctx.packet_call, ir.Lookahead: self.ctx.packet_call,
            ir.EmitHeaders: self.ctx.packet_call, ir.ExternCall: self.ctx.extern_call,
            ir.SubApply: self.ctx.sub_apply,
        }

    def emit(self, node: ir.Call) -> V | None:
        for spill in node.pre:
            self.exprs.emit(spill)
        return self._by_kind[type(node)](node)

    # ------------------------------------------------------------------ headers, stacks
    def is_valid(self, node: ir.IsValid) -> V | None:
        return self.valid_code(node, self.exprs.emit(node.base))

    def valid_code(self, node: ir.IsValid, base: V) -> V | None:
        """A header's validity flag; a union's: whether one of its members is valid."""
        if node.header.kind == "header_union":
            return V("(" + " or ".join(f"{base.code}.{pyfield(n)}._v" for n, _ in node.header.fields) + ")",
                     BoolT())
        return V(f"{base.code}._v", BoolT())

    def set_validity(self, node: ir.SetValidity) -> V | None:
        return self.write_validity(node, self.exprs.emit(node.base))

    def write_validity(self, node: ir.SetValidity, base: V) -> V | None:
        """simple_switch's add_header for ``setValid``: an invalid header becomes valid
        with all fields 0; a valid one is left as it is; a union's other members
        become invalid first."""
        if not node.valid:
            return V(f"{base.code}._v = False", VoidT())
        if node.parent is not None:
            invalidate_siblings(self.ctx, self.exprs.emit(node.parent), node.member)
        return V(f"{base.code}.set_valid()", VoidT())

    def stack_shift(self, node: ir.StackShift) -> V | None:
        return V(f"{self.exprs.emit(node.base).code}.{node.method}({node.count})", VoidT())

    # ------------------------------------------------------------------ tables
    def table_apply(self, node: ir.TableApply) -> V | None:
        """A call of the table's helper, which gives (action index, hit)."""
        call = f"{node.table.pyfunc}(st, L)"
        return V(call, node.type, None, Sym("tableresult", None, call, obj=node.table))

    # ------------------------------------------------------------------ actions, functions
    def arg_code(self, a: ir.Arg) -> str | None:
        """An argument's value (an out argument's fresh value), its place's run-time
        indexes kept in temporaries first."""
        for spill in a.pre:
            self.exprs.emit(spill)
        return self.exprs.emit(a.value).code if a.value is not None else fresh_value(a.type)

    def action_call(self, node: ir.ActionCall) -> V | None:
        """A call of the action's or function's Python function with the arguments'
        values (an out argument's fresh value); with out/inout parameters it returns
        their values in a tuple (after a function's return value, before an exiting
        action's flag), which are stored back in order."""
        codes = [self.arg_code(a) for a in node.args]
        call = f"{node.callee.pyfunc}(st, L{''.join(', ' + str(c) for c in codes)})"
        outs = [a for a in node.args if a.direction in ("out", "inout")]
        if not outs:
            return V(call, node.type)
        r = self.ctx.tmp("r")
        self.ctx.emit(f"{r} = {call}")
        first = 0 if node.ret is None else 1
        for i, a in enumerate(outs):
            if a.place is not None:
                self.stores.store_node(a.place, f"{r}[{i + first}]")
        if node.exits:
            self.ctx.emit(f"if {r}[{len(outs)}]: raise EXIT")  # after the copy-out
        if node.ret is not None and not isinstance(node.ret, VoidT):
            return V(f"{r}[0]", node.ret)
        return None
