"""The type checker of extern calls: calls of the v1model/core extern functions and
of the methods of extern instances (counters, registers, meters) become typed calls
(``ir.ExternCall``), with every argument checked by the extern's rules and
every error raised with its place; extern_calls.py (and the fast path's
fast_externs.py) writes them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from p4target import model as M
from p4target.compiler import ir
from p4target.compiler.scope import Sym
from p4target.compiler.typecheck_expr import expr_text
from p4target.compiler.types import BitT, BoolT, EnumT, ErrorT, IntT, StringT, StructT, TupleT, Type, VoidT
from p4target.frontend import ast as A
from p4target.frontend.source import Loc, error, unsupported

if TYPE_CHECKING:
    from p4target.compiler.context import CompilerContext
    from p4target.compiler.typecheck_expr import ExprChecker
    from p4target.compiler.typecheck_stmt import StmtChecker

# the extern functions the target implements, and the kinds of their results
FUNCTIONS = {"verify", "mark_to_drop", "hash", "static_assert", "random", "verify_checksum", "update_checksum",
             "verify_checksum_with_payload", "update_checksum_with_payload", "clone",
             "clone_preserving_field_list", "resubmit_preserving_field_list",
             "recirculate_preserving_field_list", "truncate", "digest", "log_msg", "assert", "assume"}


class ExternChecker:
    """The extern calls of the program compiler ``ctx``, typed and checked; their
    arguments are ``exprs``' (the expression checker), their out arguments'
    places ``stmts``' rules."""

    def __init__(self, ctx: CompilerContext, exprs: ExprChecker, stmts: StmtChecker) -> None:
        self.ctx = ctx
        self.exprs = exprs
        self.stmts = stmts
        self._list_digests: list[Loc] | None = None  # the digest(r, {...}) calls, in source order

    def node(self, e: A.Call, name: str, args: list[ir.Expr | None], t: Type | None = None,
             sym: Sym | None = None, **parts: object) -> ir.ExternCall:
        return ir.ExternCall(loc=e.loc, type=t if t is not None else VoidT(), call=e, name=name,
                                  instance=sym.obj if sym is not None else None,
                                  code=sym.code if sym is not None else "", args=tuple(args),
                                  **parts)  # type: ignore[arg-type]  # the parts are ExternCall's own fields

    def arg(self, e: A.Call, i: int) -> A.Expr:
        return e.args[i].value  # type: ignore[return-value]  # nargs refused '_'

    # ------------------------------------------------------------------ methods
    def method(self, e: A.Call, sym: Sym, name: str) -> ir.ExternCall:
        inst = sym.obj
        kind = inst.kind
        if kind == "counter" and name == "count":
            self.ctx.nargs(e, 1)
            return self.node(e, name, [self.index(e, 0)], sym=sym)
        if kind == "direct_counter" and name == "count":
            self.ctx.nargs(e, 0)
            return self.node(e, name, [], sym=sym)
        if kind == "register" and name == "read":
            if len(e.args) == 1:
                return self.node(e, name, [self.index(e, 0)], inst.elem_type, sym=sym)
            self.ctx.nargs(e, 2)
            index = self.index(e, 1)
            out, tt = self.out_place(self.arg(e, 0), inst.elem_type)
            return self.node(e, name, [None, index], sym=sym, out=out, out_type=tt)
        if kind == "register" and name == "write":
            self.ctx.nargs(e, 2)
            value = self.exprs.check_as(self.arg(e, 1), inst.elem_type, "register value")
            return self.node(e, name, [self.index(e, 0), value], sym=sym)
        if kind == "meter" and name == "execute_meter":
            self.ctx.nargs(e, 2)
            index = self.index(e, 0)
            out, tt = self.out_place(self.arg(e, 1), None)
            return self.node(e, name, [index, None], sym=sym, out=out, out_type=tt)
        if kind == "direct_meter" and name == "read":
            self.ctx.nargs(e, 1)
            out, tt = self.out_place(self.arg(e, 0), None)
            return self.node(e, name, [None], sym=sym, out=out, out_type=tt)
        raise error(e.loc, f"{kind} has no method '{name}'")

    def index(self, e: A.Call, i: int) -> ir.Expr:
        v = self.exprs.check_value(self.arg(e, i))
        if not isinstance(v.type, (BitT, IntT)):
            raise error(self.arg(e, i).loc, f"index must be an integer, not {v.type}")
        return v

    def out_place(self, target: A.Expr, t: Type | None) -> tuple[ir.Expr, Type]:
        """The place an extern's result (an integer) is stored into, and its type: an
        l-value of type ``t`` when given, else of any bit<W>, int or serializable
        enum type."""
        self.stmts.check_lvalue(target)
        tt = self.exprs.check_value(target).type
        if t is not None and not (tt is t or tt == t):
            raise error(target.loc, f"out argument must have type {t}, not {tt}")
        if not isinstance(tt, (BitT, IntT)) and not (isinstance(tt, EnumT) and tt.underlying is not None):
            raise error(target.loc, f"out argument must be bit<W>, not {tt}")
        return self.stmts.store_target(target), tt

    def enum_member_name(self, e: A.Expr, enum: str) -> str:
        v = self.exprs.check_value(e)
        if not isinstance(v.type, EnumT) or v.type.name != enum or v.const is None:
            raise error(e.loc, f"expected a constant {enum}.<member>, got '{expr_text(e)}'")
        for n, val in v.type.members.items():
            if val == v.const:
                return n
        raise error(e.loc, f"bad {enum} value")

    # ------------------------------------------------------------------ functions
    def function(self, e: A.Call, name: str) -> ir.ExternCall:
        if name not in FUNCTIONS:
            raise unsupported(e.loc, f"extern function '{name}'",
                              "use the v1model/core functions the embedded target implements")
        how = getattr(self, "_" + name, None) or self._checksum
        return how(e, name)

    def _verify(self, e: A.Call, name: str) -> ir.ExternCall:
        if self.ctx.fn_kind != "parser":
            raise error(e.loc, "verify() is only allowed in a parser")
        self.ctx.nargs(e, 2)
        c = self.exprs.check_as(self.arg(e, 0), BoolT(), "verify condition")
        return self.node(e, name, [c, self.exprs.check_as(self.arg(e, 1), ErrorT(), "verify error")])

    def _mark_to_drop(self, e: A.Call, name: str) -> ir.ExternCall:
        self.ctx.nargs(e, 1)
        return self.node(e, name, [self.exprs.check_value(self.arg(e, 0))])

    def _hash(self, e: A.Call, name: str) -> ir.ExternCall:
        self.ctx.nargs(e, 5)
        algo = self.enum_member_name(self.arg(e, 1), "HashAlgorithm")
        bits = self.exprs.bits.check(self.arg(e, 3))
        base = self.exprs.check_value(self.arg(e, 2))
        mx = self.exprs.check_value(self.arg(e, 4))
        for v, a in ((base, self.arg(e, 2)), (mx, self.arg(e, 4))):
            if not isinstance(v.type, (BitT, IntT)):
                raise error(a.loc, f"hash base and max must be integers, not {v.type}")
            if isinstance(v.type, IntT):  # their type parameters have nothing else to be inferred from
                raise error(a.loc, f"{expr_text(a)}: could not infer a width for hash's base or max; give it "
                            f"one, e.g. (bit<32>){expr_text(a)}")
        out, tt = self.out_place(self.arg(e, 0), None)
        return self.node(e, name, [None, None, base, None, mx], out=out, out_type=tt, member=algo, bits=bits)

    def _static_assert(self, e: A.Call, name: str) -> ir.ExternCall:
        """``static_assert(check[, message])``: checked now; true when it holds."""
        self.ctx.nargs(e, 1, 2)
        check = self.exprs.check_value(self.arg(e, 0))
        if not isinstance(check.type, BoolT) or check.const is None:
            raise error(e.args[0].loc, "static_assert needs a bool known at compile time")
        if not check.const:
            message = self.exprs.check_value(self.arg(e, 1)).const if len(e.args) == 2 else None
            raise error(e.loc, "static_assert failed" + (f": {message}" if message else ""))
        return replace(self.node(e, name, [check], BoolT()), const=True)

    def _random(self, e: A.Call, name: str) -> ir.ExternCall:
        self.ctx.nargs(e, 3)
        self.stmts.check_lvalue(self.arg(e, 0))
        target = self.exprs.check_value(self.arg(e, 0))
        lo = self.exprs.check_as(self.arg(e, 1), target.type, "random lo")
        hi = self.exprs.check_as(self.arg(e, 2), target.type, "random hi")
        out, tt = self.out_place(self.arg(e, 0), None)
        return self.node(e, name, [target, lo, hi], out=out, out_type=tt)

    def _checksum(self, e: A.Call, name: str) -> ir.ExternCall:
        """verify_checksum, update_checksum and their _with_payload forms."""
        self.ctx.nargs(e, 4)
        cond = self.exprs.check_as(self.arg(e, 0), BoolT(), "checksum condition")
        bits = self.exprs.bits.check(self.arg(e, 1))
        algo = self.enum_member_name(self.arg(e, 3), "HashAlgorithm")
        if name.startswith("verify"):
            cv = self.exprs.check_value(self.arg(e, 2))
            if not isinstance(cv.type, BitT):
                raise error(self.arg(e, 2).loc, f"checksum field must be bit<W>, not {cv.type}")
            return self.node(e, name, [cond, None, cv], member=algo, bits=bits)
        out, tt = self.out_place(self.arg(e, 2), None)
        return self.node(e, name, [cond, None, None], member=algo, bits=bits, out=out, out_type=tt)

    def _clone(self, e: A.Call, name: str) -> ir.ExternCall:
        self.ctx.nargs(e, 2)
        kind = self.enum_member_name(self.arg(e, 0), "CloneType")
        return self.node(e, name, [None, self.exprs.check_value(self.arg(e, 1))], member=kind)

    def _clone_preserving_field_list(self, e: A.Call, name: str) -> ir.ExternCall:
        self.ctx.nargs(e, 3)
        kind = self.enum_member_name(self.arg(e, 0), "CloneType")
        sess = self.exprs.check_value(self.arg(e, 1))
        fl = self.exprs.const_int(self.arg(e, 2), "field list index")
        return self.node(e, name, [None, sess, ir.Const(type=IntT(), loc=e.args[2].loc, const=fl)], member=kind)

    def _resubmit_preserving_field_list(self, e: A.Call, name: str) -> ir.ExternCall:
        self.ctx.nargs(e, 1)
        fl = self.exprs.const_int(self.arg(e, 0), "field list index")
        return self.node(e, name, [ir.Const(type=IntT(), loc=e.args[0].loc, const=fl)])

    _recirculate_preserving_field_list = _resubmit_preserving_field_list

    def _truncate(self, e: A.Call, name: str) -> ir.ExternCall:
        self.ctx.nargs(e, 1)
        v = self.exprs.check_value(self.arg(e, 0))
        if not isinstance(v.type, (BitT, IntT)):
            raise error(self.arg(e, 0).loc, f"truncate length must be an integer, not {v.type}")
        return self.node(e, name, [v])

    def _digest(self, e: A.Call, name: str) -> ir.ExternCall:
        self.ctx.nargs(e, 2)
        receiver = self.exprs.check_value(self.arg(e, 0))
        data = self.arg(e, 1)
        if e.type_args:
            t = self.ctx.resolve_type(e.type_args[0])
        else:
            if isinstance(data, A.ListExpr):
                return self.list_digest(e, receiver, data)
            if isinstance(data, A.StructExpr):
                raise error(data.loc, "digest of a struct expression needs its type: digest<T>(receiver, {...})")
            t = self.exprs.check_value(data).type
        if not isinstance(t, StructT) or t.kind != "struct":
            raise error(data.loc, f"digest data must be a struct, not {t}")
        value = self.exprs.check_as(data, t, "digest data")
        self.ctx.note_digest(t, e.loc)
        return self.node(e, "digest", [receiver, value], digest=t.name)

    def list_digest(self, e: A.Call, receiver: ir.Expr, data: A.ListExpr) -> ir.ExternCall:
        """``digest(receiver, {a, b})``: a tuple digest named ``digest_<n>``, n its place
        among such calls in the source (p4c's P4Info name)."""
        if self._list_digests is None:
            self._list_digests = [n.loc for n in A.walk(self.ctx.program) if isinstance(n, A.Call)
                                  and isinstance(n.func, A.Name) and n.func.name == "digest" and not n.type_args
                                  and len(n.args) == 2 and isinstance(n.args[1].value, A.ListExpr)]
        name = f"digest_{self._list_digests.index(e.loc)}"
        values = [self.exprs.check_value(i) for i in data.items]
        fields = tuple(M.Field(str(i), self.ctx.wire_width(v.type, it.loc))
                       for i, (v, it) in enumerate(zip(values, data.items, strict=True)))
        self.ctx.digests[name] = M.Digest(name, fields, tuple_type=True)
        value = self.exprs.check_as(data, TupleT(tuple(v.type for v in values)), "digest data")
        return self.node(e, "digest", [receiver, value], digest=name)

    def _log_msg(self, e: A.Call, name: str) -> ir.ExternCall:
        self.ctx.nargs(e, 1, 2)
        fmt = self.exprs.check_value(self.arg(e, 0))
        if not isinstance(fmt.type, StringT):
            raise error(self.arg(e, 0).loc, "log_msg needs a string format")
        items: list[ir.Expr | None] = [fmt]
        if len(e.args) == 2:
            a = self.arg(e, 1)
            items += [self.exprs.check_value(it) for it in (a.items if isinstance(a, A.ListExpr) else [a])]
        return self.node(e, name, items)

    def _assert(self, e: A.Call, name: str) -> ir.ExternCall:
        self.ctx.nargs(e, 1)
        return self.node(e, name, [self.exprs.check_as(self.arg(e, 0), BoolT(), "assert condition")])

    _assume = _assert
