"""The fast path's call generator (``FastCallEmitter``, the ``CallEmitter`` that
``FastStatementCompiler`` composes): a header of the packet state has its validity
in a local, so ``isValid`` reads it and ``setValid``/``setInvalid`` set it (a
``SetValid`` node, ``fast_deferred``, which also clears the fields of a header
that was invalid); any other call is written as the general generator writes it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from p4target.compiler import ir_call
from p4target.compiler.emit_call import CallEmitter
from p4target.compiler.fast_deferred import SetValid
from p4target.compiler.types import BoolT
from p4target.compiler.values import V

if TYPE_CHECKING:
    from p4target.compiler.context import FastContext
    from p4target.compiler.emit_expr import ExprEmitter
    from p4target.compiler.fast_place_code import FastPlaceCode


class FastCallEmitter(CallEmitter):
    """``CallEmitter`` for the fast compiler ``ctx``; the packet-state locals are
    ``places``' (the fast path's generator of places)."""

    ctx: FastContext

    def __init__(self, ctx: FastContext, exprs: ExprEmitter, places: FastPlaceCode) -> None:
        super().__init__(ctx, exprs)
        self.places = places

    def valid_code(self, node: ir_call.IsValid, base: V) -> V | None:
        if base.path is None or node.header.kind != "header":
            return super().valid_code(node, base)
        return V(self.places.valid_local(base.path), BoolT())

    def write_validity(self, node: ir_call.SetValidity, base: V) -> V | None:
        if base.path is None:
            return super().write_validity(node, base)
        if node.valid:
            self.places.raw_local(base.path)
            self.ctx.dirty_at.pop(base.path, None)  # it may clear the dirty flag
            self.ctx.out.append(SetValid(self.ctx.ind, base.path, node.header))
        else:
            self.ctx.emit(f"{self.places.valid_local(base.path)} = False")
        return None
