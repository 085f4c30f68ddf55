"""The type checker of calls: a call of the syntax tree becomes a typed call
(ir.py), its callee resolved and its arguments checked, with every error of it
raised, with its place; its arguments are the expression checker's nodes
(typecheck_expr.py). The call generator (emit_call.py) then writes it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from p4target.compiler import ir
from p4target.compiler.scope import Sym
from p4target.compiler.typecheck_expr import expr_text, kind_of
from p4target.compiler.entities import SubBlock, is_packet_in
from p4target.compiler.typecheck_extern import ExternChecker
from p4target.compiler.typecheck_packet import PacketChecker
from p4target.compiler.typecheck_stmt import StmtChecker, ast_nodes
from p4target.compiler.types import BoolT, ObjT, StackT, StructT, Type, VoidT
from p4target.frontend import ast as A
from p4target.frontend.source import error, unsupported

if TYPE_CHECKING:
    from p4target.compiler.context import CompilerContext
    from p4target.compiler.expressions import ExpressionCompiler


class ArgOrder(Protocol):
    """Who tells which arguments have side effects (the statement compiler)."""

    def has_effects(self, e: A.Expr | None) -> bool: ...


def symbol_of(node: ir.Expr) -> Sym | None:
    """The symbol a checked expression names when it is not a plain value (as its
    generated ``V`` carries it)."""
    if isinstance(node, (ir.Ref, ir.TypeName)):
        return node.sym
    if isinstance(node, ir.CallResult) and isinstance(node.node, ir.TableApply):
        return Sym("tableresult", None, "", obj=node.node.table)
    return None


class CallChecker:
    """The calls of the program compiler ``ctx``, typed and checked; their arguments
    are ``expressions``' (its ``checker``), their l-values ``stmts``' rules;
    ``order`` settles the order of their arguments' evaluation. ``in_place``
    (the fast path's): an action is compiled where it is called, its arguments
    bound to locals in order, so none is kept in a temporary first (a P4 function's
    arguments are checked too, though the fast path's generator gives up on it)."""

    def __init__(self, ctx: CompilerContext, expressions: ExpressionCompiler, stmts: StmtChecker,
                 order: ArgOrder, in_place: bool = False) -> None:
        self.ctx = ctx
        self.expressions = expressions
        self.exprs = expressions.checker
        self.stmts = stmts
        self.order = order
        self.in_place = in_place
        self.packets = PacketChecker(ctx, self.exprs, stmts)
        self.externs = ExternChecker(ctx, self.exprs, stmts)

    def check(self, e: A.Call) -> ir.Call:
        f = e.func
        if isinstance(f, A.Member):
            return self.method_call(e, f)
        if isinstance(f, A.Name):
            sym = self.ctx.scope.lookup(f.name)
            if sym is None:
                raise error(f.loc, f"unknown function or action '{f.name}'; declare it before use")
            sym = self.overload(sym, f.name, len(e.args))
            if sym.kind in ("action", "func"):
                return self.action_call(e, sym)
            if sym.kind == "function":
                settled = self.settle_args(e, sym.obj.params)
                pre = self.stmts.take()
                node = self.externs.function(positional(settled, sym.obj.params), f.name)
                return replace(node, pre=pre) if pre else node
            raise error(f.loc, f"'{f.name}' is a {sym.kind} and cannot be called")
        raise unsupported(e.loc, f"calling '{expr_text(f)}'", "call an action, method or extern")

    def overload(self, sym: Sym, name: str, nargs: int) -> Sym:
        """p4c picks among callables of one name by the number of arguments: an action
        or function given more arguments than it takes yields to a top-level extern
        function of that name (``action hash() { hash(...); }``)."""
        if sym.kind in ("action", "func") and nargs > len(sym.obj.decl.params):
            outer = self.ctx.global_scope.lookup(name)
            if outer is not None and outer.kind == "function":
                return outer
        return sym

    def method_call(self, e: A.Call, f: A.Member) -> ir.Call:
        """``x.m(args)``: a header's, a stack's, the packet's, a table's, an extern
        instance's or a sub-block's method."""
        name = f.name
        if name == "apply" and isinstance(f.obj, A.Name):
            tsym = self.ctx.scope.lookup(f.obj.name)
            if tsym is not None and tsym.kind == "table":
                self.nargs(e, 0)
                return ir.TableApply(loc=e.loc, type=ObjT("tableresult", tsym.obj.name), table=tsym.obj,
                                          after_terms=self.exprs.evaluated_before())
        base = self.exprs.check(f.obj)
        bt = base.type
        sym = symbol_of(base)
        if isinstance(bt, StructT) and (sym is None or sym.kind == "var"):
            return self.header_method(e, f, base, name)
        if isinstance(bt, StackT) and name in ("push_front", "pop_front"):
            self.nargs(e, 1)
            k = self.exprs.const_int(e.args[0].value, f"{name} count")  # type: ignore[arg-type]  # nargs checked the argument is there ('_' is refused for them)
            if k < 0:
                raise error(e.loc, f"{name} count must be >= 0")
            return ir.StackShift(loc=e.loc, type=VoidT(), base=base, stack=bt, method=name, count=k)
        if sym is None:
            raise error(f.loc, f"'{expr_text(f.obj)}' of type {bt} has no method '{name}'")
        if sym.kind == "packet_in":
            return self.packets.packet_in_method(e, name)
        if sym.kind == "packet_out":
            return self.packets.emit(e, f)
        if sym.kind == "table":
            raise error(f.loc, f"table has no method '{name}'; use apply()")
        if sym.kind == "instance":
            decl = self.ctx.extern_decls.get(sym.obj.kind)
            method = next((m for m in decl.methods if m.name == name and len(m.params) == len(e.args)),
                          None) if decl is not None else None
            params = method.params if method else None
            settled = self.settle_args(e, params)
            pre = self.stmts.take()
            node = self.externs.method(positional(settled, params), sym, name)
            return replace(node, pre=pre) if pre else node
        if sym.kind == "subblock":
            return self.sub_apply(e, sym.obj, name)
        raise error(f.loc, f"'{expr_text(f.obj)}' has no method '{name}'")

    def settle_args(self, e: A.Call, params: list[A.Param] | None) -> A.Call:
        """An extern call whose arguments have side effects, with the arguments
        evaluated now, left to right (P4_16 6.8): values into temporaries, out/inout
        l-values fixed; the call is then compiled on the results."""
        if not any(self.order.has_effects(a.value) for a in e.args):
            return e
        args = []
        for i, a in enumerate(e.args):
            p = params[i] if params is not None and i < len(params) and not a.name else None
            if p is not None and p.direction in ("out", "inout") and a.value is not None:
                self.stmts.check_lvalue(a.value)
                args.append(A.Arg(a.name, self.stmts.freeze_lvalue(a.value, every_index=True), a.loc))
            else:
                args.append(A.Arg(a.name, self.settled_arg(a.value), a.loc))
        return A.Call(e.loc, e.func, e.type_args, args)

    def settled_arg(self, x: A.Expr | None) -> A.Expr | None:
        """The value of ``x`` kept in a temporary now (lists item by item; constants,
        types and instances as they are)."""
        if x is None:
            return None
        if isinstance(x, A.ListExpr):
            return A.ListExpr(x.loc, [self.settled_arg(i) for i in x.items])  # type: ignore[misc]  # settled keeps an expression an expression
        if isinstance(x, A.StructExpr):
            return A.StructExpr(x.loc, [(n, self.settled_arg(v)) for n, v in x.fields])  # type: ignore[misc]  # as above
        v = self.exprs.check(x)
        if v.const is not None or kind_of(v) not in (None, "var"):
            return x
        return self.stmts.spill(v, x.loc)

    def nargs(self, e: A.Call, *counts: int) -> None:
        """Refuse a call given a number of arguments other than ``counts``, or a ``_``."""
        if len(e.args) not in counts:
            want = " or ".join(map(str, counts))
            raise error(e.loc, f"'{expr_text(e.func)}' takes {want} argument(s), got {len(e.args)}")
        for a in e.args:
            if a.value is None:
                raise unsupported(a.loc, "a '_' argument", "pass a value")

    # ------------------------------------------------------------------ headers
    def header_method(self, e: A.Call, f: A.Member, base: ir.Expr, name: str) -> ir.Call:
        t = base.type
        assert isinstance(t, StructT)
        if t.kind == "struct":
            raise error(f.loc, f"struct {t.name} has no method '{name}'")
        if name == "isValid":
            self.nargs(e, 0)
            return ir.IsValid(loc=e.loc, type=BoolT(), base=base, header=t)
        if name in ("setValid", "setInvalid"):
            self.nargs(e, 0)
            if t.kind == "header_union":
                raise error(f.loc, f"{name} applies to a member header of a union, not the union")
            self.stmts.check_lvalue(f.obj)
            parent = None
            member = ""
            if name == "setValid" and isinstance(base, ir.Field):
                # simple_switch's add_header: the union's other members become invalid
                parent, member = base.base, base.name
            return ir.SetValidity(loc=e.loc, type=VoidT(), base=base, header=t, valid=name == "setValid",
                                       parent=parent, member=member)
        raise error(f.loc, f"{t} has no method '{name}'; use isValid, setValid or setInvalid")


    # ------------------------------------------------------------------ actions, functions
    def action_call(self, e: A.Call, sym: Sym) -> ir.ActionCall:
        """A call of an action or P4 function, by copy-in/copy-out (P4_16 6.8): the
        arguments are evaluated left to right (a value is kept in a temporary when a
        later argument has side effects), each out/inout l-value is fixed when its
        argument is evaluated, an inout header/struct/stack is passed as a copy, and
        the results are copied out left to right after the call, also when the callee
        executed ``exit`` (12.5), which then goes on in the caller."""
        act = sym.obj
        params = act.decl.params
        ret = getattr(act, "ret", None)  # set for functions, None for actions
        if self.ctx.fn_kind == "parser" and ret is None:
            raise error(e.loc, "actions cannot be called from a parser")
        given = self.bind_args(e, params)
        later = [False] * len(given) if self.in_place else \
            [any(self.order.has_effects(a) for a in given[i + 1:]) for i in range(len(given))]
        args: list[ir.Arg] = []
        targets: list[A.Expr | None] = []
        for i, (p, a) in enumerate(zip(params, given, strict=False)):
            pt = self.ctx.param_type(p)
            if p.direction == "out" and a is None and self.is_dont_care(e, params, p):
                StmtChecker.check_fresh(pt, e.loc)  # the value is computed and dropped
                args.append(ir.Arg(loc=e.loc, param=p.name, direction="out", type=pt, value=None, place=None))
                targets.append(None)
                continue
            loc = a.loc if a is not None else e.loc
            value, target = self.argument(e, act, p, pt, a)
            pre = self.stmts.take()
            if later[i]:
                value = ir.Spill(type=pt, loc=loc, value=value, how="arg")
            args.append(ir.Arg(loc=loc, param=p.name, direction=p.direction, type=pt, value=value, place=None,
                                    pre=pre))
            targets.append(target)
        # the places the results are stored into, once every argument is evaluated
        args = [arg if t is None else ir.Arg(loc=arg.loc, param=arg.param, direction=arg.direction,
                                                  type=arg.type, value=arg.value,
                                                  place=self.stmts.store_target(t), pre=arg.pre)
                for arg, t in zip(args, targets, strict=True)]
        outs = any(arg.direction in ("out", "inout") for arg in args)
        exits = ret is None and outs and self.may_exit(act)
        return ir.ActionCall(loc=e.loc, type=ret if ret is not None else VoidT(), callee=act, ret=ret,
                                  args=tuple(args), exits=exits)

    def argument(self, e: A.Call, act: object, p: A.Param, pt: Type,
                 a: A.Expr | None) -> tuple[ir.Expr | None, A.Expr | None]:
        """The value passed for ``p`` (None for an out argument) and, for an out or
        inout argument, the l-value its result goes to (its run-time indexes fixed)."""
        if p.direction in ("out", "inout"):
            if a is None:
                raise error(e.loc, f"argument for out parameter '{p.name}' is missing")
            self.stmts.check_lvalue(a)
            if not self.in_place:
                a = self.stmts.freeze_lvalue(a, every_index=True)
            node = self.exprs.check_value(a)
            if not (node.type is pt or node.type == pt):
                raise error(a.loc, f"argument for {p.direction} parameter '{p.name}' must have "
                            f"type {pt}, not {node.type}")
            if p.direction == "inout":
                return (node if self.in_place else self.exprs.convert(node, pt, a.loc)), a
            StmtChecker.check_fresh(pt, a.loc)
            return None, a
        if a is None:
            raise error(e.loc, f"missing argument for parameter '{p.name}' of action "
                        f"{act.p4name}")  # type: ignore[attr-defined]  # an ActionInfo
        return self.exprs.check_as(a, pt, f"argument '{p.name}'"), None

    @staticmethod
    def is_dont_care(e: A.Call, params: list[A.Param], p: A.Param) -> bool:
        """Whether the argument for ``p`` is written ``_`` (not just left out)."""
        if any(a.name for a in e.args):
            return any(a.name == p.name and a.value is None for a in e.args)
        i = params.index(p)
        return i < len(e.args) and e.args[i].value is None

    def may_exit(self, act: object) -> bool:
        """True when the action's body can execute ``exit`` (itself or in an action it
        calls). Such an action with out/inout parameters returns a flag after its
        results, so that its caller copies them out before exiting too."""
        memo = self.ctx.exit_memo
        key = id(act)
        if key not in memo:
            memo[key] = False  # P4 actions do not recurse
            scope = getattr(act, "scope", None) or self.ctx.global_scope
            found = False
            for n in ast_nodes(act.decl.body):  # type: ignore[attr-defined]  # the actions here are ActionInfo with a declaration
                if isinstance(n, A.Exit):
                    found = True
                elif isinstance(n, A.Call) and isinstance(n.func, A.Name):
                    sym = scope.lookup(n.func.name)
                    if sym is not None and sym.kind == "action" and self.may_exit(sym.obj):
                        found = True
                if found:
                    break
            memo[key] = found
        return memo[key]

    def bind_args(self, e: A.Call, params: list[A.Param]) -> list[A.Expr | None]:
        """The arguments of ``e`` in the order of ``params`` (named ones put in place,
        the missing ones given their defaults, None where there is none or ``_``)."""
        if any(a.name for a in e.args):
            byname = {a.name: a.value for a in e.args}
            unknown = [n for n in byname if n not in {p.name for p in params}]
            if unknown:
                raise error(e.loc, f"no parameter named '{unknown[0]}'")
            return [byname[p.name] if p.name in byname else p.default for p in params]
        if len(e.args) > len(params):
            raise error(e.loc, f"too many arguments: '{expr_text(e.func)}' takes {len(params)}")
        vals: list[A.Expr | None] = [a.value for a in e.args]
        return vals + [p.default for p in params[len(vals):]]  # a missing argument takes the default value


    # ------------------------------------------------------------------ sub-blocks
    def sub_apply(self, e: A.Call, sub: SubBlock, name: str) -> ir.SubApply:
        """``c.apply(args)`` of a control or parser instance: its arguments bound to its
        parameters (a parser's packet_in apart), checked and converted to their types."""
        self.check_sub_apply(e, sub, name)
        decl_params = [p for p in sub.decl.params
                       if not (sub.kind == "parser" and is_packet_in(self.ctx.resolve_type(p.type)))]
        given = self.bind_args(A.Call(e.loc, e.func, [], [a for a in e.args if not self.is_packet_arg(a)]),
                               decl_params)
        if sub.kind == "parser":  # a parser may have no packet_in parameter (it extracts nothing)
            pk = [a for a in e.args if self.is_packet_arg(a)]
            if len(pk) != len(sub.decl.params) - len(decl_params):
                raise error(e.loc, f"apply of parser {sub.decl.name} needs the packet_in argument" if not pk
                            else f"parser {sub.decl.name} has no packet_in parameter; remove the argument")
        args: list[ir.Arg] = []
        targets: list[A.Expr | None] = []
        for (p, t, _attr), a in zip(sub.params, given, strict=False):
            if a is None:
                raise error(e.loc, f"missing argument for parameter '{p.name}' of {sub.decl.name}")
            value: ir.Expr | None
            if p.direction in ("out", "inout"):
                self.stmts.check_lvalue(a)
                value = self.exprs.check_value(a)
                if not (value.type is t or value.type == t):
                    raise error(a.loc, f"argument for {p.direction} parameter '{p.name}' must have "
                                f"type {t}, not {value.type}")
                targets.append(a)
                if p.direction == "out":
                    value = None
            else:
                value = self.exprs.check_as(a, t, f"argument {p.name}")
                targets.append(None)
            args.append(ir.Arg(loc=a.loc, param=p.name, direction=p.direction, type=t, value=value,
                                    place=None))
        args = [arg if x is None else ir.Arg(loc=arg.loc, param=arg.param, direction=arg.direction,
                                                  type=arg.type, value=arg.value,
                                                  place=self.stmts.store_target(x))
                for arg, x in zip(args, targets, strict=True)]
        attrs = tuple(attr for (_p, _t, attr), _a in zip(sub.params, given, strict=False))
        return ir.SubApply(loc=e.loc, type=VoidT(), block=sub, args=tuple(args), attrs=attrs)

    def check_sub_apply(self, e: A.Call, sub: SubBlock, name: str) -> None:
        """Refuse a method other than apply, and an apply from where it cannot run."""
        if name != "apply":
            raise error(e.func.loc, f"{sub.kind} instance '{expr_text(e.func.obj)}' has no method "  # type: ignore[attr-defined]  # a method call: e.func is a Member
                        f"'{name}'; use apply(...)")
        if sub.kind == "parser" and self.ctx.fn_kind != "parser":
            raise error(e.loc, "a parser instance can only be applied from a parser state")
        if sub.kind == "control" and self.ctx.fn_kind == "parser":
            raise error(e.loc, "a control instance cannot be applied from a parser")
        if self.ctx.fn_kind == "action" or self.ctx.fn_kind == "function":
            raise error(e.loc, f"a {sub.kind} cannot be applied from an action or function")

    def is_packet_arg(self, a: A.Arg) -> bool:
        if isinstance(a.value, A.Name):
            s = self.ctx.scope.lookup(a.value.name)
            return s is not None and s.kind == "packet_in"
        return False


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
