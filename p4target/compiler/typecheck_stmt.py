"""The type checker of statements: a statement of the syntax tree becomes a typed
statement (ir.py), with every name, type and rule of it checked and every
error of it raised, with its place; its expressions are the expression checker's
(typecheck_expr.py). The generator (emit_stmt.py) then writes it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import fields, is_dataclass, replace
from typing import TYPE_CHECKING

from p4target.compiler import ir
from p4target.compiler.emit_stmt import fresh_value, length_place
from p4target.compiler.scope import Sym
from p4target.compiler.typecheck_expr import expr_text, kind_of
from p4target.compiler.types import BitT, BoolT, EnumT, ErrorT, IntT, StackT, StructT, TupleT, Type, VarbitT, VoidT
from p4target.frontend import ast as A
from p4target.frontend.source import Loc, error, unsupported

if TYPE_CHECKING:
    from p4target.compiler.context import CompilerContext
    from p4target.compiler.expressions import ExpressionCompiler


def ast_nodes(node: object) -> Iterator[A.Stmt | A.Expr | A.Arg | A.SwitchCase]:
    """Every statement and expression node under ``node`` (itself included)."""
    stack = [node]
    while stack:
        x = stack.pop()
        if isinstance(x, (list, tuple)):
            stack.extend(x)
        elif is_dataclass(x) and isinstance(x, (A.Stmt, A.Expr, A.Arg, A.SwitchCase)):
            yield x
            stack.extend(getattr(x, f.name) for f in fields(x))


def body_of(s: A.Stmt) -> tuple[A.Stmt, ...]:
    """The statements of a branch or loop body (a block's, or the statement alone)."""
    return tuple(s.stmts) if isinstance(s, A.Block) else (s,)


class StmtChecker:
    """The statements of the program compiler ``ctx``, typed and checked; their
    expressions are ``expressions``' (its ``checker``; its emitter writes a constant's
    code for its symbol and the places whose code names a varbit's width)."""

    def __init__(self, ctx: CompilerContext, expressions: ExpressionCompiler) -> None:
        self.ctx = ctx
        self.expressions = expressions
        self.exprs = expressions.checker
        self.pending: list[ir.Spill] = []  # the values kept in temporaries, not yet taken by a node
        self.spilled = 0  # the temporaries' names in scope

    def local_name(self, name: str) -> str:
        """A Python name for the P4 local ``name``, unused in the function so far."""
        py = f"l_{name}"
        k = 1
        while py in self.ctx.locals_used:
            k += 1
            py = f"l_{name}_{k}"
        self.ctx.locals_used.add(py)
        return py

    # ------------------------------------------------------------------ simple statements
    @staticmethod
    def empty(s: A.Empty) -> ir.Empty:
        return ir.Empty(loc=s.loc)

    @staticmethod
    def block(s: A.Block) -> ir.Block:
        return ir.Block(loc=s.loc, body=tuple(s.stmts))

    def if_(self, s: A.If) -> ir.If:
        cond = self.exprs.check_value(s.cond)
        if not isinstance(cond.type, BoolT):
            raise error(s.cond.loc, f"if condition must be bool, not {cond.type}; compare it, e.g. x != 0")
        other = body_of(s.other) if s.other is not None else None
        return ir.If(loc=s.loc, cond=cond, then=body_of(s.then), other=other)

    def exit(self, s: A.Exit) -> ir.Exit:
        if self.ctx.fn_kind == "parser":
            raise error(s.loc, "exit is not allowed in a parser; use transition reject")
        if self.ctx.fn_kind == "function":
            raise error(s.loc, "exit is not allowed in a function (P4_16 12.5); return a value "
                        "and exit in the caller")
        return ir.Exit(loc=s.loc)

    def return_(self, s: A.Return) -> ir.Return:
        outs = tuple(self.ctx.action_outs)
        if self.ctx.fn_kind == "function":
            return ir.Return(loc=s.loc, value=self.returned(s), in_function=True, outs=outs)
        if s.value is not None:
            raise error(s.value.loc, "only functions return values; use an out parameter")
        if self.ctx.fn_kind == "parser":
            raise error(s.loc, "return is not allowed in a parser state")
        return ir.Return(loc=s.loc, value=None, in_function=False,
                              outs=outs if self.ctx.fn_kind == "action" else ())

    def returned(self, s: A.Return) -> ir.Expr | None:
        """A function's returned value, converted to its return type (None: void)."""
        ret = self.ctx.function_ret
        if isinstance(ret, VoidT):
            if s.value is not None:
                raise error(s.value.loc, "this function returns void; remove the value")
            return None
        if s.value is None:
            raise error(s.loc, f"this function must return a value of type {ret}")
        return self.exprs.check_as(s.value, ret, "return value")  # type: ignore[arg-type]  # ret is set in a function (a return with a value is only allowed there)

    # ------------------------------------------------------------------ declarations
    def const_decl(self, s: A.VarDecl) -> ir.ConstDecl:
        """``const T name = value;``: the name is defined here, with the constant's code
        and value."""
        self.ctx.scope.check_not_param(s.name, s.loc)
        t = self.ctx.resolve_type(s.type)
        v = self.exprs.check_value(s.init) if s.init is not None else None
        if v is None or v.const is None:
            raise error(s.loc, f"const {s.name} needs a compile-time value")
        value = self.exprs.convert(v, t, s.loc, f"const {s.name}")
        code = self.expressions.emitter.emit(value).code
        self.ctx.scope.define(s.name, Sym("const", t, code, eval(code, {"__builtins__": {}})), s.loc)
        return ir.ConstDecl(loc=s.loc, name=s.name, type=t, value=value)

    def var_decl(self, s: A.VarDecl) -> ir.VarDecl:
        """``T name [= init];``: the name is defined once its initializer is checked."""
        self.ctx.scope.check_not_param(s.name, s.loc)
        t = self.ctx.resolve_type(s.type)
        py = self.local_name(s.name)
        if isinstance(t, VarbitT):
            self.ctx.varbit_locals.add(py)
        init = None
        if s.init is not None:
            init = self.exprs.check_as(s.init, t, f"initializer of {s.name}")
        else:
            self.check_fresh(t, s.loc)
        width = self.varbit_width(s.init, s.loc) if s.init is not None and isinstance(t, VarbitT) else None
        self.ctx.scope.define(s.name, Sym("var", t, py), s.loc)
        return ir.VarDecl(loc=s.loc, name=s.name, type=t, local=py, init=init, init_width=width)

    @staticmethod
    def check_fresh(t: Type, loc: Loc) -> None:
        """Raise unless a variable of type ``t`` has a fresh value (0, false, ...)."""
        if fresh_value(t) is None:
            raise unsupported(loc, f"a variable of type {t}", "use bit<W>, bool, headers or structs")

    def varbit_width(self, e: A.Expr, loc: Loc) -> str:
        """Where the current width of the varbit field or variable ``e`` is kept."""
        code = self.expressions.value(e).code
        if not (isinstance(e, A.Member) or code in self.ctx.varbit_locals):
            raise unsupported(loc, "a varbit value that is not a field or a variable",
                              "assign one varbit field or variable to another")
        return length_place(code)

    # ------------------------------------------------------------------ loops
    def break_(self, s: A.Break | A.Continue) -> ir.Break:
        word = "break" if isinstance(s, A.Break) else "continue"
        if not self.ctx.loops:
            raise error(s.loc, f"'{word}' outside a for loop; remove it")
        loop = self.ctx.loops[-1]
        if isinstance(s, A.Continue) and loop is not None:
            return ir.Break(loc=s.loc, word=word, update=tuple(loop[1]), scope=loop[0])
        return ir.Break(loc=s.loc, word=word, update=None, scope=None)

    def for_(self, s: A.For) -> ir.For:
        return ir.For(loc=s.loc, scope=self.ctx.scope.child(), init=tuple(s.init), cond=s.cond,
                           update=tuple(s.update), body=body_of(s.body))

    def loop_test(self, cond: A.Expr) -> ir.LoopTest:
        """A for loop's condition, checked in its scope once its initial statements are."""
        c = self.exprs.check_value(cond)
        if not isinstance(c.type, BoolT):
            raise error(cond.loc, f"for condition must be bool, not {c.type}; compare it, e.g. i < 4")
        return ir.LoopTest(loc=cond.loc, cond=c)

    def for_in(self, s: A.ForIn) -> ir.ForIn:
        """``for (T x in lo .. hi)`` (both ends included), ``for (T x in {a, b})`` or
        ``for (T x in stack)``; without ``T``, the loop assigns the variable ``x``."""
        existing: ir.Expr | None = None
        if s.type is None:  # for (x in ...): assigns the variable x
            target = A.Name(s.loc, s.name)
            t = self.lvalue_type(target)
            existing = self.exprs.check_value(target)
        else:
            t = self.ctx.resolve_type(s.type)
        it = s.iterable
        stack = lo = hi = None
        items: tuple[ir.Expr, ...] | None = None
        if not isinstance(it, (A.Range, A.ListExpr)) and isinstance(self.exprs.check_value(it).type, StackT):
            stack = self.exprs.check_value(it)
            elem = stack.type.elem  # type: ignore[attr-defined]  # stack.type is a StackT (checked just above)
            if elem is not t and elem != t:
                raise error(s.loc, f"the loop variable of a loop over {expr_text(it)} must have "
                            f"type {elem}, not {t}")
        elif not isinstance(t, (BitT, IntT, BoolT, EnumT)):
            raise unsupported(s.loc, f"a for-in loop over values of type {t}",
                              "loop over bit<W> values (a range lo .. hi or a list) or a header stack")
        elif isinstance(it, A.Range):
            lo = self.exprs.check_as(it.lo, t, "range start")
            hi = self.exprs.check_as(it.hi, t, "range end")
        elif isinstance(it, A.ListExpr):
            items = tuple(self.exprs.check_as(x, t, "list element") for x in it.items)
        else:
            raise unsupported(it.loc, "a for-in loop over this expression",
                              "loop over a range lo .. hi or a list {a, b}")
        scope = self.ctx.scope.child()
        local = ""
        if existing is None:
            local = self.local_name(s.name)
            scope.define(s.name, Sym("var", t, local), s.loc)
        return ir.ForIn(loc=s.loc, local=local, existing=existing, scope=scope, lo=lo, hi=hi,
                             items=items, stack=stack, body=body_of(s.body))

    # ------------------------------------------------------------------ assignment
    def assign(self, s: A.Assign) -> ir.Assign:
        """``lhs = rhs;`` and ``lhs op= rhs;``. A stack index on the left computed with
        a call is evaluated before the right-hand side, and only once;
        a plain one is read when the value is stored (p4c's SideEffectOrdering, so
        BMv2's order). A compound assignment evaluates its left-hand side once: every
        run-time index is fixed first, then ``lhs = lhs op rhs``."""
        self.check_lvalue(s.target)
        target = self.freeze_lvalue(s.target, every_index=s.op is not None)
        pre = self.take()
        value = s.value if s.op is None else A.Binary(s.loc, s.op, target, s.value)
        node = self.assign_to(target, value, s.loc)
        return replace(node, pre=pre) if pre else node

    def assign_to(self, target: A.Expr, value: A.Expr, loc: Loc) -> ir.Assign:
        t = self.lvalue_type(target)
        node = self.exprs.check_as(value, t, f"assignment to {expr_text(target)}")
        place = self.store_target(target)
        widths = (self.varbit_width(target, loc), self.varbit_width(value, loc)) if isinstance(t, VarbitT) else None
        return ir.Assign(loc=loc, target=place, value=node, widths=widths)

    def lvalue_type(self, target: A.Expr) -> Type:
        self.check_lvalue(target)
        # written as well as checked: the fast path names the target's locals now,
        # before the value's, which orders its initial values
        return self.expressions.value(target).type

    def store_target(self, target: A.Expr) -> ir.Expr:
        """The checked place ``target``, refused where a value cannot be stored."""
        if isinstance(target, A.Slice):
            bt = self.exprs.check_value(target.obj).type
            if not isinstance(bt, BitT):
                raise error(target.loc, f"cannot assign to a slice of {bt}")
            self.store_target(target.obj)
        elif isinstance(target, A.Member) and isinstance(self.exprs.check_value(target.obj).type, StackT):
            raise unsupported(target.loc, f"assigning to stack member '{target.name}'",
                              "assign to an element s[i] instead")
        return self.exprs.check_value(target)

    def check_lvalue(self, e: A.Expr, inner: bool = False) -> None:
        """Raise unless ``e`` may be assigned; ``inner``: ``e`` is a part of the target
        (an element of a tuple may then be a header, struct or stack changed in place)."""
        if isinstance(e, A.Name):
            sym = self.ctx.scope.lookup(e.name)
            if sym is None:
                raise error(e.loc, f"unknown name '{e.name}'; declare it before use")
            if sym.kind != "var":
                raise error(e.loc, f"cannot assign to '{e.name}': it is a {sym.kind}")
            if sym.obj == "ro":
                raise error(e.loc, f"cannot assign to '{e.name}': it is an 'in' parameter")
            return
        if isinstance(e, A.Index) and isinstance(self.exprs.check_value(e.obj).type, TupleT) and not (
                inner and isinstance(self.exprs.check_value(e).type, (StructT, StackT))):
            raise unsupported(e.loc, "assigning to a tuple element", "assign the whole tuple: t = {a, b}")
        if isinstance(e, (A.Member, A.Index, A.Slice)):
            self.check_lvalue(e.obj, True)
            return
        raise error(e.loc, f"'{expr_text(e)}' cannot be assigned to")

    def freeze_lvalue(self, e: A.Expr, every_index: bool) -> A.Expr:
        """``e`` with its stack indices that have side effects (or, with
        ``every_index``, all that are not constants) evaluated now into temporaries."""
        if isinstance(e, A.Member):
            return A.Member(e.loc, self.freeze_lvalue(e.obj, every_index), e.name)
        if isinstance(e, A.Slice):
            return A.Slice(e.loc, self.freeze_lvalue(e.obj, every_index), e.hi, e.lo)
        if isinstance(e, A.Index):
            obj = self.freeze_lvalue(e.obj, every_index)
            # an index with a call (even a pure function's) is evaluated first, as p4c's
            # SideEffectOrdering does with every call
            if not (every_index or any(isinstance(n, A.Call) for n in ast_nodes(e.index))):
                return A.Index(e.loc, obj, e.index)
            iv = self.exprs.check_value(e.index)
            if iv.const is not None:
                return A.Index(e.loc, obj, e.index)
            return A.Index(e.loc, obj, self.spill(iv, e.index.loc))
        return e

    def spill(self, node: ir.Expr, loc: Loc) -> A.Name:
        """The value ``node`` kept in a temporary (an ``ir.Spill``, pending until a
        node takes it: ``take``), as a name in scope that checks to it."""
        spill = ir.Spill(type=node.type, loc=loc, value=node, how="name")
        self.pending.append(spill)
        self.spilled += 1
        name = f"$s{self.spilled}"
        self.ctx.scope.define(name, Sym("spilled", node.type, "", obj=spill), loc)
        return A.Name(loc, name)

    def take(self) -> tuple[ir.Spill, ...]:
        """The values kept in temporaries since the last ``take``, in order: the node
        that takes them has them written first."""
        taken = tuple(self.pending)
        self.pending.clear()
        return taken

    # ------------------------------------------------------------------ switch
    def switch(self, s: A.Switch) -> ir.Switch:
        if self.ctx.fn_kind == "action":  # BMv2's limit: p4c-bm2-ss reports it after the type checker's errors
            self.ctx.deferred.append(error(s.loc, "a switch statement in an action; BMv2 cannot run one there "
                                       "(p4c-bm2-ss refuses it): use if/else"))
        seen: set[object] = set()
        for label in (lb for case in s.cases for lb in case.labels):
            self.check_new_label(label, seen)
        subject = self.exprs.check(s.expr)
        action_run = kind_of(subject) == "action_run"
        if not action_run and not isinstance(subject.type, (BitT, EnumT, ErrorT, IntT)):
            raise error(s.expr.loc, f"cannot switch on a value of type {subject.type}")
        cases = tuple(ir.SwitchCase(loc=s.loc, labels=tuple(self.label(lb, subject, action_run) for lb in c.labels),
                                         body=tuple(c.body.stmts) if c.body is not None else None)
                      for c in s.cases)
        if cases and cases[-1].body is None:
            raise error(s.loc, "the last switch case has no body; add { }")
        return ir.Switch(loc=s.loc, subject=subject, action_run=action_run, cases=cases)

    def label(self, label: A.Expr | None, subject: ir.Expr, action_run: bool) -> ir.Expr | int | None:
        """A case label's test: None for default, an action's index in the switched
        table, or a constant of the switched value's type."""
        if label is None or isinstance(label, A.DefaultExpr) or (isinstance(label, A.Name) and label.name == "_"):
            return None
        if action_run:
            if not isinstance(label, A.Name):
                raise error(label.loc, "switch on action_run needs action names as labels")
            table = subject.base.node.table  # type: ignore[attr-defined]  # action_run is a member of a table's apply result
            return int(table.action_index(label.name, label.loc))
        node = self.exprs.check_value(label)
        if node.const is None:
            raise error(label.loc, "switch labels must be compile-time constants")
        return node if isinstance(subject.type, IntT) else self.exprs.convert(node, subject.type, label.loc,
                                                                            "switch label")

    def check_new_label(self, label: A.Expr | None, seen: set[object]) -> None:
        """Refuse a switch label that an earlier label of the same switch already names."""
        if label is None or isinstance(label, A.DefaultExpr):
            return
        key: object = label.name if isinstance(label, A.Name) else self.exprs.check_value(label).const
        if key is None:
            return
        if key in seen:
            raise error(label.loc, f"duplicate case label {expr_text(label)}")
        seen.add(key)
