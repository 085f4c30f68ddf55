"""The type checker of calls: a call of the syntax tree becomes a typed call
(ir_call.py), its callee resolved and its arguments checked, with every error of it
raised, with its place; its arguments are the expression checker's nodes
(typecheck_expr.py). The call generator (emit_call.py) then writes it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from p4target.compiler import ir, ir_call
from p4target.compiler.scope import Sym
from p4target.compiler.typecheck_expr import expr_text
from p4target.compiler.types import BoolT, StackT, StructT, VoidT
from p4target.compiler.values import V
from p4target.frontend import ast as A
from p4target.frontend.source import error, unsupported

if TYPE_CHECKING:
    from p4target.compiler.context import CompilerContext
    from p4target.compiler.expressions import ExpressionCompiler
    from p4target.compiler.typecheck_stmt import StmtChecker


class OnePass(Protocol):
    """Who compiles in one pass the calls not yet checked here (the statement
    compiler, which hands them on to the parts that own them)."""

    def action_call(self, e: A.Call, sym: Sym) -> V | None: ...
    def table_apply(self, e: A.Call, sym: Sym) -> V | None: ...
    def settle_args(self, e: A.Call, params: list[A.Param] | None) -> A.Call: ...


def symbol_of(node: ir.Expr) -> Sym | None:
    """The symbol a checked expression names when it is not a plain value (as its
    generated ``V`` carries it)."""
    if isinstance(node, (ir.Ref, ir.TypeName)):
        return node.sym
    if isinstance(node, ir.CallResult):
        return node.value.sym
    return None


class CallChecker:
    """The calls of the program compiler ``ctx``, typed and checked; their arguments
    are ``expressions``' (its ``checker``), their l-values ``stmts``' rules;
    ``one_pass`` compiles the kinds of call still compiled in one pass."""

    def __init__(self, ctx: CompilerContext, expressions: ExpressionCompiler, stmts: StmtChecker,
                 one_pass: OnePass) -> None:
        self.ctx = ctx
        self.expressions = expressions
        self.exprs = expressions.checker
        self.stmts = stmts
        self.one_pass = one_pass

    def check(self, e: A.Call) -> ir_call.Call:
        f = e.func
        if isinstance(f, A.Member):
            return self.method_call(e, f)
        if isinstance(f, A.Name):
            sym = self.ctx.scope.lookup(f.name)
            if sym is None:
                raise error(f.loc, f"unknown function or action '{f.name}'; declare it before use")
            sym = self.overload(sym, f.name, len(e.args))
            if sym.kind in ("action", "func"):
                return self.compiled(e, self.one_pass.action_call(e, sym))
            if sym.kind == "function":
                return self.compiled(e, self.ctx.extern_function(
                    positional(self.one_pass.settle_args(e, sym.obj.params), sym.obj.params), f.name))
            raise error(f.loc, f"'{f.name}' is a {sym.kind} and cannot be called")
        raise unsupported(e.loc, f"calling '{expr_text(f)}'", "call an action, method or extern")

    @staticmethod
    def compiled(e: A.Call, value: V | None) -> ir_call.Compiled:
        return ir_call.Compiled(loc=e.loc, type=value.type if value is not None else VoidT(), value=value)

    def overload(self, sym: Sym, name: str, nargs: int) -> Sym:
        """p4c picks among callables of one name by the number of arguments: an action
        or function given more arguments than it takes yields to a top-level extern
        function of that name (``action hash() { hash(...); }``)."""
        if sym.kind in ("action", "func") and nargs > len(sym.obj.decl.params):
            outer = self.ctx.global_scope.lookup(name)
            if outer is not None and outer.kind == "function":
                return outer
        return sym

    def method_call(self, e: A.Call, f: A.Member) -> ir_call.Call:
        """``x.m(args)``: a header's, a stack's, the packet's, a table's, an extern
        instance's or a sub-block's method."""
        base = self.exprs.check(f.obj)
        bt = base.type
        name = f.name
        sym = symbol_of(base)
        if isinstance(bt, StructT) and (sym is None or sym.kind == "var"):
            return self.header_method(e, f, base, name)
        if isinstance(bt, StackT) and name in ("push_front", "pop_front"):
            self.nargs(e, 1)
            k = self.exprs.const_int(e.args[0].value, f"{name} count")  # type: ignore[arg-type]  # nargs checked the argument is there ('_' is refused for them)
            if k < 0:
                raise error(e.loc, f"{name} count must be >= 0")
            return ir_call.StackShift(loc=e.loc, type=VoidT(), base=base, stack=bt, method=name, count=k)
        if sym is None:
            raise error(f.loc, f"'{expr_text(f.obj)}' of type {bt} has no method '{name}'")
        if sym.kind == "packet_in":
            return self.compiled(e, self.ctx.packet_in_method(e, name))
        if sym.kind == "packet_out":
            if name != "emit":
                raise error(f.loc, f"packet_out has no method '{name}'; use emit")
            self.nargs(e, 1)
            self.ctx.emit_header(self.expressions.value(e.args[0].value), e.args[0].loc)  # type: ignore[arg-type]  # as above
            return self.compiled(e, None)
        if sym.kind == "table":
            if name != "apply":
                raise error(f.loc, f"table has no method '{name}'; use apply()")
            self.nargs(e, 0)
            return self.compiled(e, self.one_pass.table_apply(e, sym))
        if sym.kind == "instance":
            decl = self.ctx.extern_decls.get(sym.obj.kind)
            method = next((m for m in decl.methods if m.name == name and len(m.params) == len(e.args)),
                          None) if decl is not None else None
            params = method.params if method else None
            return self.compiled(e, self.ctx.extern_method(
                positional(self.one_pass.settle_args(e, params), params), sym, name))
        if sym.kind == "subblock":
            return self.compiled(e, self.ctx.sub_apply(e, sym, name))
        raise error(f.loc, f"'{expr_text(f.obj)}' has no method '{name}'")

    def nargs(self, e: A.Call, *counts: int) -> None:
        """Refuse a call given a number of arguments other than ``counts``, or a ``_``."""
        if len(e.args) not in counts:
            want = " or ".join(map(str, counts))
            raise error(e.loc, f"'{expr_text(e.func)}' takes {want} argument(s), got {len(e.args)}")
        for a in e.args:
            if a.value is None:
                raise unsupported(a.loc, "a '_' argument", "pass a value")

    # ------------------------------------------------------------------ headers
    def header_method(self, e: A.Call, f: A.Member, base: ir.Expr, name: str) -> ir_call.Call:
        t = base.type
        assert isinstance(t, StructT)
        if t.kind == "struct":
            raise error(f.loc, f"struct {t.name} has no method '{name}'")
        if name == "isValid":
            self.nargs(e, 0)
            return ir_call.IsValid(loc=e.loc, type=BoolT(), base=base, header=t)
        if name in ("setValid", "setInvalid"):
            self.nargs(e, 0)
            if t.kind == "header_union":
                raise error(f.loc, f"{name} applies to a member header of a union, not the union")
            self.stmts.check_lvalue(f.obj)
            parent = None
            member = ""
            if name == "setValid" and isinstance(f.obj, A.Member):
                # simple_switch's add_header: the union's other members become invalid
                parent = self.exprs.check_value(f.obj.obj)
                member = f.obj.name
            return ir_call.SetValidity(loc=e.loc, type=VoidT(), base=base, header=t, valid=name == "setValid",
                                       parent=parent, member=member)
        raise error(f.loc, f"{t} has no method '{name}'; use isValid, setValid or setInvalid")


def positional(e: A.Call, params: list[A.Param] | None) -> A.Call:
    """``e`` with arguments passed by name put in the order of ``params`` (P4_16 8.21);
    unchanged when they are all positional or the parameters are unknown."""
    if params is None or not any(a.name for a in e.args):
        return e
    byname = {a.name: a for a in e.args}
    unknown = [n for n in byname if n not in {p.name for p in params}]
    if unknown:
        raise error(e.loc, f"no parameter named '{unknown[0]}'")
    args = []
    for p in params:
        a = byname.get(p.name)
        if a is None:
            if p.default is None:
                raise error(e.loc, f"missing argument for parameter '{p.name}' of {expr_text(e.func)}")
            a = A.Arg(None, p.default, e.loc)
        args.append(A.Arg(None, a.value, a.loc))
    return A.Call(e.loc, e.func, e.type_args, args)
