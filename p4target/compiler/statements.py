"""The statements and calls of a program compiler. A statement is checked into a
typed statement (typecheck_stmt.py, ``StmtChecker``) and then written
(emit_stmt.py, ``StmtEmitter``), which hands the bodies of compound statements and
the stores into places back here; a call (an action or P4 function, a table's
apply, a header's or stack's method, the packet's methods, an extern, a
sub-block's apply) is checked into a typed call (typecheck_call.py,
``CallChecker``) and then written (emit_call.py, ``CallEmitter``).
"""

from __future__ import annotations

from p4target.compiler import ir
from p4target.compiler.context import CompilerContext
from p4target.compiler.emit_call import CallEmitter
from p4target.compiler.emit_stmt import StmtEmitter, fresh_value
from p4target.compiler.expressions import ExpressionCompiler
from p4target.compiler.values import V
from p4target.compiler.scope import Scope
from p4target.compiler.typecheck_call import CallChecker
from p4target.compiler.typecheck_stmt import StmtChecker
from p4target.compiler.types import (
    BitT, Type,
)
from p4target.frontend import ast as A
from p4target.frontend.source import Loc, unsupported


class StatementCompiler:
    """The statements and calls of the program compiler ``ctx``, emitted through it
    (``ctx.emit`` into its ``out`` at its ``ind``); ``checker`` types and checks a
    statement, ``emitter`` writes it, ``calls`` types and checks a call,
    ``call_emitter`` writes it; their expressions are ``expressions``' (the same
    compiler's). ``FastStatementCompiler``
    (fast_statements.py) is the fast compiler's."""

    def __init__(self, ctx: CompilerContext, expressions: ExpressionCompiler) -> None:
        self.ctx = ctx
        self.expressions = expressions
        self.checker = StmtChecker(ctx, expressions)
        self.emitter = StmtEmitter(ctx, expressions.emitter, self)
        self.calls = CallChecker(ctx, expressions, self.checker, self)
        self.call_emitter = CallEmitter(ctx, expressions.emitter, self)

    def sm_store(self, field: str, code: str) -> str:
        """A statement setting standard_metadata.<field> where no block parameter names it."""
        return f"st.sm.{field} = {code}"

    def local_name(self, name: str) -> str:
        return self.checker.local_name(name)

    # ------------------------------------------------------------------ statements
    def stmts(self, stmts: list[A.Stmt]) -> None:
        for s in stmts:
            self.stmt(s)

    def scoped(self, stmts: list[A.Stmt]) -> None:
        """Statements of a block, in a child scope."""
        saved = self.ctx.scope
        self.ctx.scope = saved.child()
        self.stmts(stmts)
        self.ctx.scope = saved

    def in_scope(self, scope: Scope, stmts: list[A.Stmt]) -> None:
        """Statements in the scope ``scope`` (a loop's update, before a continue)."""
        saved = self.ctx.scope
        self.ctx.scope = scope
        self.stmts(stmts)
        self.ctx.scope = saved

    def loop_in(self, scope: Scope, stmts: list[A.Stmt], update: list[A.Stmt] | None = None) -> None:
        """The body of a loop whose variables are in ``scope``; ``update``: a
        three-clause loop's update statements, which a ``continue`` runs first."""
        saved = self.ctx.scope
        self.ctx.scope = scope
        self.ctx.loops.append(None if update is None else (scope, update))
        self.block_body(stmts)
        self.ctx.loops.pop()
        self.ctx.scope = saved

    def loop_test(self, scope: Scope, cond: A.Expr) -> None:
        """A for loop's test, checked and written in its scope ``scope``."""
        saved = self.ctx.scope
        self.ctx.scope = scope
        self.emitter.emit(self.checker.loop_test(cond))
        self.ctx.scope = saved

    def block_body(self, stmts: list[A.Stmt]) -> None:
        """Statements of a nested block, in a child scope, never empty in Python."""
        n = len(self.ctx.out)
        self.scoped(stmts)
        if len(self.ctx.out) == n:
            self.ctx.emit("pass")

    def stmt(self, s: A.Stmt) -> None:
        """Compile one statement (its kind's ``_stmt_*`` method)."""
        self.ctx.last_loc = s.loc
        how = getattr(self, f"_stmt_{type(s).__name__}", None)
        if how is None:
            raise unsupported(s.loc, f"statement {type(s).__name__}", "rewrite it")
        how(s)

    def _stmt_Block(self, s: A.Block) -> None:
        self.emitter.emit(self.checker.block(s))

    def _stmt_Assign(self, s: A.Assign) -> None:
        self.assign_stmt(s)

    def _stmt_CallStmt(self, s: A.CallStmt) -> None:
        self.call_stmt(s.call)

    def _stmt_If(self, s: A.If) -> None:
        self.emitter.emit(self.checker.if_(s))

    def _stmt_Switch(self, s: A.Switch) -> None:
        self.emitter.emit(self.checker.switch(s))

    def _stmt_VarDecl(self, s: A.VarDecl) -> None:
        self.emitter.emit(self.checker.const_decl(s) if s.is_const else self.checker.var_decl(s))

    def _stmt_Exit(self, s: A.Exit) -> None:
        self.emitter.emit(self.checker.exit(s))

    def _stmt_Return(self, s: A.Return) -> None:
        self.emitter.emit(self.checker.return_(s))

    def _stmt_Empty(self, s: A.Empty) -> None:
        self.emitter.emit(self.checker.empty(s))

    def _stmt_For(self, s: A.For) -> None:
        self.emitter.emit(self.checker.for_(s))

    def _stmt_ForIn(self, s: A.ForIn) -> None:
        self.emitter.emit(self.checker.for_in(s))

    def _stmt_Break(self, s: A.Break | A.Continue) -> None:
        self.emitter.emit(self.checker.break_(s))

    _stmt_Continue = _stmt_Break

    # ------------------------------------------------------------------ loops

    @staticmethod
    def zero(t: Type, loc: Loc) -> str:
        """Code for a fresh value of ``t``: 0, False, an invalid header, a zeroed struct."""
        StmtChecker.check_fresh(t, loc)
        return fresh_value(t)  # type: ignore[return-value]  # check_fresh refused the types without one

    # ------------------------------------------------------------------ assignment
    def assign_stmt(self, s: A.Assign) -> None:
        self.write_assign(self.checker.assign(s))

    def assign(self, target: A.Expr, value: A.Expr, loc: Loc) -> None:
        """``target = value`` (a block local's initial value)."""
        self.write_assign(self.checker.assign_to(target, value, loc))

    def write_assign(self, node: ir.Assign) -> None:
        self.emitter.emit(node)

    def freeze_lvalue(self, e: A.Expr, every_index: bool) -> A.Expr:
        return self.checker.freeze_lvalue(e, every_index)

    def has_effects(self, e: A.Expr | None) -> bool:
        """True when evaluating ``e`` may change state or depend on an order: any call
        except ``isValid()``, ``lookahead`` and P4 functions without out/inout
        parameters (whose arguments are looked at in turn)."""
        if e is None or isinstance(e, (A.IntLit, A.BoolLit, A.StrLit, A.Name, A.TypeNameExpr,
                                       A.DefaultExpr)):
            return False
        if isinstance(e, A.Call):
            return self.call_has_effects(e)
        parts = operands(e)
        return True if parts is None else any(self.has_effects(x) for x in parts)

    def call_has_effects(self, e: A.Call) -> bool:
        f = e.func
        if any(self.has_effects(a.value) for a in e.args):
            return True
        if isinstance(f, A.Member):
            if f.name in ("isValid", "lookahead", "minSizeInBits", "minSizeInBytes"):
                return self.has_effects(f.obj)
            return True
        if isinstance(f, A.Name):
            sym = self.ctx.scope.lookup(f.name)
            if sym is not None and sym.kind == "func":
                return any(p.direction in ("out", "inout") for p in sym.obj.decl.params)
        return True

    def varbit_width(self, e: A.Expr, loc: Loc) -> str:
        return self.checker.varbit_width(e, loc)

    def lvalue_type(self, target: A.Expr) -> Type:
        return self.checker.lvalue_type(target)

    def check_lvalue(self, e: A.Expr) -> None:
        self.checker.check_lvalue(e)

    def store(self, target: A.Expr, code: str, loc: Loc) -> None:
        """Emit ``target = code`` where ``code`` already has the target's type."""
        self.store_node(self.checker.store_target(target), code)

    def store_node(self, target: ir.Expr, code: str) -> None:
        """Emit ``target = code`` for the checked target ``target``."""
        emit = self.expressions.emitter.emit
        if isinstance(target, ir.Slice):
            base = emit(target.base)
            hi, lo = target.hi, target.lo
            bt = base.type
            assert isinstance(bt, BitT)  # the checker's store_target
            m = ((1 << (hi - lo + 1)) - 1) << lo
            keep = bt.mask ^ m
            val = f"({code} << {lo})" if lo else code
            if bt.signed:
                new = f"(({base.code} & {keep:#x}) | {val})"
                h = 1 << (bt.width - 1)
                self.store_node(target.base, f"(({new} ^ {h}) - {h})")
            else:
                self.store_node(target.base, f"(({base.code} & {keep:#x}) | {val})")
            return
        v = emit(target)
        if isinstance(target, ir.Ref) and v.code in self.ctx.param_targets:
            # a whole block parameter (hdr = ..., meta = ...): replace it in the packet state
            self.ctx.emit(f"{v.code} = st.{self.ctx.param_targets[v.code]} = {code}")
            return
        if isinstance(target, ir.StackIndex) and emit(target.index).const is None:
            # a whole element at a run-time index: out of range writes are ignored
            s = emit(target.base)
            i = self.ctx.tmp("i")
            self.ctx.emit(f"{i} = {emit(target.index).code}")
            self.ctx.emit(f"if 0 <= {i} < {target.stack.size}: {s.code}.h[{i}] = {code}")
            return
        self.ctx.emit(f"{v.code} = {code}")

    # ------------------------------------------------------------------ calls
    def call_stmt(self, e: A.Call) -> None:
        self.emitter.emit(ir.CallStmt(loc=e.loc, call=self.calls.check(e)))

    def write_call(self, node: ir.Call) -> V | None:
        return self.call_emitter.emit(node)

    def call_expr(self, e: A.Call) -> V:
        return self.call_value(self.calls.check(e), e)

    def call_value(self, node: ir.Call, e: A.Call) -> V:
        """The value of the checked call ``node`` (of ``e``), written now (the checker
        refused a call that returns nothing)."""
        v = self.call_emitter.emit(node)
        assert v is not None, e.loc
        return v

    def call(self, e: A.Call, as_stmt: bool) -> V | None:
        """A call checked (``calls``, a ``CallChecker``) then written (``call_emitter``)."""
        return self.call_emitter.emit(self.calls.check(e))

    def nargs(self, e: A.Call, *counts: int) -> None:
        self.calls.nargs(e, *counts)

    def arg(self, e: A.Call, i: int) -> A.Expr:
        return e.args[i].value  # type: ignore[return-value]  # '_' arguments are handled by the callers that allow them

    # ------------------------------------------------------------------ actions
    def may_exit(self, act: object) -> bool:
        return self.calls.may_exit(act)

    def bind_args(self, e: A.Call, params: list[A.Param]) -> list[A.Expr | None]:
        return self.calls.bind_args(e, params)


def operands(e: A.Expr) -> list[A.Expr] | None:
    """The sub-expressions a value of ``e`` is computed from, for the kinds whose own
    evaluation has no effect; None for other kinds."""
    if isinstance(e, (A.Member, A.Slice)):
        return [e.obj]
    if isinstance(e, A.Index):
        return [e.obj, e.index]
    if isinstance(e, A.Unary):
        return [e.operand]
    if isinstance(e, A.Binary):
        return [e.left, e.right]
    if isinstance(e, A.Ternary):
        return [e.cond, e.then, e.other]
    if isinstance(e, A.Cast):
        return [e.expr]
    if isinstance(e, A.ListExpr):
        return list(e.items)
    if isinstance(e, A.StructExpr):
        return [v for _, v in e.fields]
    return None
