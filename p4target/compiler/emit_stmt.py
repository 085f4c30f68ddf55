"""The generator of statements: Python code for a typed statement (``ir.Stmt``,
made by typecheck_stmt.py), emitted through the program compiler.

It only writes code: every name, type and rule was checked before. Its expressions
are written by the expression generator (emit_expr.py, whose places the fast path
writes its own way). A body of a compound statement is handed back to the
statement compiler (``Bodies``), which checks and writes its statements in turn.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from p4target.compiler import ir
from p4target.compiler.emit_expr import fresh_value
from p4target.compiler.types import VarbitT

if TYPE_CHECKING:
    from p4target.compiler.context import CompilerContext
    from p4target.compiler.emit_expr import ExprEmitter
    from p4target.compiler.scope import Scope
    from p4target.compiler.values import V
    from p4target.frontend import ast as A


def length_place(code: str) -> str:
    """Where the current width of the varbit value at the place ``code`` is kept:
    beside a field or block local (``h._len_f``, ``L._len_x``), or a local of its own."""
    head, dot, attr = code.rpartition(".")
    return f"{head}._len_{attr}" if dot else f"_len_{code}"


class Bodies(Protocol):
    """Who checks and writes the statements of a body, and writes a value into a
    place (the statement compiler, whose stores the fast path writes its own way)."""

    def scoped(self, stmts: list[A.Stmt]) -> None: ...
    def in_scope(self, scope: Scope, stmts: list[A.Stmt]) -> None: ...
    def loop_in(self, scope: Scope, stmts: list[A.Stmt], update: list[A.Stmt] | None = None) -> None: ...
    def loop_test(self, scope: Scope, cond: A.Expr) -> None: ...
    def block_body(self, stmts: list[A.Stmt]) -> None: ...
    def store_node(self, target: ir.Expr, code: str) -> None: ...
    def write_call(self, node: ir.Call) -> V | None: ...


class StmtEmitter:
    """Python code for the typed statements of the program compiler ``ctx``, their
    expressions written by ``exprs``; ``bodies`` compiles the statements of a body."""

    def __init__(self, ctx: CompilerContext, exprs: ExprEmitter, bodies: Bodies) -> None:
        self.ctx = ctx
        self.exprs = exprs
        self.bodies = bodies
        self._by_kind: dict[type, Callable[[Any], None]] = {  # each method takes its own node class
            ir.Empty: self.empty, ir.Assign: self.assign, ir.Block: self.block, ir.If: self.if_,
            ir.Exit: self.exit, ir.Return: self.return_, ir.VarDecl: self.var_decl,
            ir.ConstDecl: self.const_decl, ir.Switch: self.switch, ir.CallStmt: self.call_stmt,
            ir.For: self.for_, ir.LoopTest: self.loop_test, ir.ForIn: self.for_in,
            ir.Break: self.break_,
        }

    def emit(self, node: ir.Stmt) -> None:
        self._by_kind[type(node)](node)

    @staticmethod
    def empty(node: ir.Empty) -> None:
        pass

    @staticmethod
    def const_decl(node: ir.ConstDecl) -> None:
        pass  # the constant's name is in scope: it runs nothing

    def block(self, node: ir.Block) -> None:
        self.bodies.scoped(list(node.body))

    def nested(self, body: tuple[A.Stmt, ...]) -> None:
        """A body indented under the line just written."""
        self.ctx.indent()
        self.bodies.block_body(list(body))
        self.ctx.dedent()

    def assign(self, node: ir.Assign) -> None:
        for spill in node.pre:
            self.exprs.emit(spill)
        self.bodies.store_node(node.target, self.exprs.emit(node.value).code)
        if node.widths is not None:  # the value's current width goes with its bits
            self.ctx.emit(f"{node.widths[0]} = {node.widths[1]}")

    def if_(self, node: ir.If) -> None:
        self.ctx.emit(f"if {self.exprs.emit(node.cond).code}:")
        self.nested(node.then)
        if node.other is not None:
            self.ctx.emit("else:")
            self.nested(node.other)

    def exit(self, node: ir.Exit) -> None:
        self.ctx.emit("raise EXIT")

    def return_(self, node: ir.Return) -> None:
        outs = "".join(o + ", " for o in node.outs)
        if node.in_function:
            val = "None" if node.value is None else self.exprs.emit(node.value).code
            self.ctx.emit(f"return ({val}, {outs})" if outs else f"return {val}")
        else:
            self.ctx.emit(f"return ({outs})" if outs else "return")

    def var_decl(self, node: ir.VarDecl) -> None:
        py = node.local
        if isinstance(node.type, VarbitT):
            self.ctx.emit(f"{length_place(py)} = 0")
        code = self.exprs.emit(node.init).code if node.init is not None else fresh_value(node.type)
        self.ctx.emit(f"{py} = {code}")
        if node.init_width is not None:
            self.ctx.emit(f"{length_place(py)} = {node.init_width}")

    def switch(self, node: ir.Switch) -> None:
        """The switched value kept in a temporary, then one ``if``/``elif``/``else`` per
        case with a body (labels without one join the next case's test)."""
        subject = self.exprs.emit(node.subject).code
        key = self.ctx.tmp("sw")
        self.ctx.emit(f"{key} = {subject}")
        pending: list[str] = []
        first = True
        for case in node.cases:
            pending += [self.label_test(key, lb) for lb in case.labels]
            if case.body is None:
                continue
            cond = "True" if "True" in pending else " or ".join(pending)
            if cond == "True" and not first:
                self.ctx.emit("else:")
            else:
                self.ctx.emit(f"{'if' if first else 'elif'} {cond}:")
            first = False
            self.nested(case.body)
            pending = []

    def label_test(self, key: str, label: ir.Expr | int | None) -> str:
        if label is None:
            return "True"
        return f"{key} == {label if isinstance(label, int) else self.exprs.emit(label).code}"

    def for_(self, node: ir.For) -> None:
        """A Python ``while True`` whose test comes first (calls in the condition run
        on every test) and whose update ends each iteration."""
        self.bodies.in_scope(node.scope, list(node.init))
        self.ctx.emit("while True:")
        self.ctx.indent()
        if node.cond is not None:
            self.bodies.loop_test(node.scope, node.cond)
        self.bodies.loop_in(node.scope, list(node.body), list(node.update))
        self.bodies.in_scope(node.scope, list(node.update))
        self.ctx.dedent()

    def loop_test(self, node: ir.LoopTest) -> None:
        self.ctx.emit(f"if not ({self.exprs.emit(node.cond).code}): break")

    def for_in(self, node: ir.ForIn) -> None:
        """A Python ``for`` over the values, computed once; a stack's elements are
        each copied as their iteration starts."""
        py = self.exprs.emit(node.existing).code if node.existing is not None else node.local
        emit = self.exprs.emit
        if node.stack is not None:
            elem = self.ctx.tmp("e")
            self.ctx.emit(f"for {elem} in {emit(node.stack).code}.h:")
            self.ctx.indent()
            self.ctx.emit(f"{py} = {elem}.copy()")
        else:
            if node.items is not None:
                seq = "(" + "".join(emit(x).code + ", " for x in node.items) + ")"
            else:
                seq = f"range({emit(node.lo).code}, ({emit(node.hi).code}) + 1)"  # type: ignore[arg-type]  # a range has both ends
            self.ctx.emit(f"for {py} in {seq}:")
            self.ctx.indent()
        self.bodies.loop_in(node.scope, list(node.body))
        self.ctx.dedent()

    def break_(self, node: ir.Break) -> None:
        if node.update is not None and node.scope is not None:
            # the three-clause form runs its update before the next test
            self.bodies.in_scope(node.scope, list(node.update))
        self.ctx.emit(node.word)

    def call_stmt(self, node: ir.CallStmt) -> None:
        """The call written (by the call generator), then what is left of it to run: its
        code, or a table applied in place of its helper's call."""
        v = self.bodies.write_call(node.call)
        if v is not None and v.sym is not None and v.sym.kind == "tableresult" \
                and self.ctx.inline_table_apply(v.sym.obj):
            return
        if v is not None and v.code:
            self.ctx.emit(v.code)
