"""The fast path's call generator (``FastCallEmitter``, the ``CallEmitter`` that
``FastStatementCompiler`` composes): a header of the packet state has its validity
in a local, so ``isValid`` reads it and ``setValid``/``setInvalid`` set it (a
``SetValid`` node, ``fast_deferred``, which also clears the fields of a header
that was invalid); a table is applied in place (``FastTables.apply_table``) and
an action is compiled where it is called, its arguments bound to locals
(``FastTables.inline_action``); any other call is written as the general
generator writes it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from p4target.compiler import ir
from p4target.compiler.emit_call import CallEmitter, Stores
from p4target.compiler.emit_stmt import fresh_value
from p4target.compiler.fast_deferred import SetValid
from p4target.compiler.fast_errors import NoFast
from p4target.compiler.types import BoolT, StackT, StructT
from p4target.compiler.values import V

if TYPE_CHECKING:
    from p4target.compiler.context import FastContext
    from p4target.compiler.emit_expr import ExprEmitter
    from p4target.compiler.fast_place_code import FastPlaceCode


class FastCallEmitter(CallEmitter):
    """``CallEmitter`` for the fast compiler ``ctx``; the packet-state locals are
    ``places``' (the fast path's generator of places)."""

    ctx: FastContext

    def __init__(self, ctx: FastContext, exprs: ExprEmitter, stores: Stores, places: FastPlaceCode) -> None:
        super().__init__(ctx, exprs, stores)
        self.places = places

    def valid_code(self, node: ir.IsValid, base: V) -> V | None:
        if base.path is None or node.header.kind != "header":
            return super().valid_code(node, base)
        return V(self.places.valid_local(base.path), BoolT())

    def write_validity(self, node: ir.SetValidity, base: V) -> V | None:
        if base.path is None:
            return super().write_validity(node, base)
        if node.valid:
            self.places.raw_local(base.path)
            self.ctx.dirty_at.pop(base.path, None)  # it may clear the dirty flag
            self.ctx.out.append(SetValid(self.ctx.ind, base.path, node.header))
        else:
            self.ctx.emit(f"{self.places.valid_local(base.path)} = False")
        return None

    def table_apply(self, node: ir.TableApply) -> V | None:
        return self.ctx.apply_table(node.table, node.after_terms)

    def action_call(self, node: ir.ActionCall) -> V | None:
        """The action's body here, each parameter a local set to its argument (a
        constant argument is read where the action reads it); the out/inout locals
        are stored back after it."""
        if node.ret is not None:
            raise NoFast("function call")  # P4 functions: not compiled in place yet
        bound: dict[str, str] = {}
        outs = []
        for a in node.args:
            py = self.ctx.tmp("ap")
            if a.direction in ("out", "inout"):
                if a.place is None:
                    raise NoFast("missing out argument")
                if isinstance(a.type, (StructT, StackT)):
                    raise NoFast("header, struct or stack passed out/inout (copied in and out)")
                code = self.exprs.emit(a.value).code if a.value is not None else fresh_value(a.type)
                outs.append((a.place, py))
            else:
                code = self.exprs.emit(a.value).code  # type: ignore[arg-type]  # an in argument has its value
                if a.value.const is not None and code.lstrip("-").isdigit():  # type: ignore[union-attr]  # as above
                    bound[a.param] = code  # a constant: read where the action reads it
                    continue
            self.ctx.emit(f"{py} = {code}")
            bound[a.param] = py
        self.ctx.inline_action(node.callee, bound)
        for place, py in outs:
            self.stores.store_node(place, py)
        return None
