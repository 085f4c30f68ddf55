"""Calls of v1model/core extern functions and extern object methods, lowered to
direct calls of the runtime ``Bindings`` (docs/target-internals.md, section 2)."""

from __future__ import annotations

from p4target import model as M
from p4target.compiler.context import CompilerContext
from p4target.compiler.expressions import expr_text
from p4target.compiler.values import V
from p4target.compiler.naming import pyfield
from p4target.compiler.scope import Sym
from p4target.compiler.types import (
    BitT, BoolT, EnumT, ErrorT, IntT, StringT, StructT, TupleT, Type, VoidT,
)
from p4target.frontend import ast as A
from p4target.frontend.source import Loc, error, unsupported

# v1model CloneType members -> the Bindings.clone kind codes (I2E=1, E2E=2)
_CLONE_KIND = {"I2E": 1, "E2E": 2}


class ExternCalls:
    """Extern function calls and extern object method calls of the program compiler
    ``ctx``, emitted through it. ``FastExterns`` (fast_externs.py) is the fast
    compiler's."""

    def __init__(self, ctx: CompilerContext) -> None:
        self.ctx = ctx
        self._list_digests: list[Loc] | None = None  # the digest(r, {...}) calls, in source order

    # ------------------------------------------------------------------ externs
    def extern_method(self, e: A.Call, sym: Sym, name: str) -> V | None:
        inst = sym.obj
        kind = inst.kind
        x = sym.code
        if kind == "counter" and name == "count":
            self.ctx.nargs(e, 1)
            return V(f"{x}.count(st, {self.index_arg(e, 0)})", VoidT())
        if kind == "direct_counter" and name == "count":
            self.ctx.nargs(e, 0)
            return V(f"{x}.count(st)", VoidT())
        if kind == "register" and name == "read":
            if len(e.args) == 1:
                return V(f"{x}.read(st, {self.index_arg(e, 0)})", inst.elem_type)
            self.ctx.nargs(e, 2)
            self.out_assign(self.ctx.arg(e, 0), f"{x}.read(st, {self.index_arg(e, 1)})",
                            inst.elem_type, e.loc)
            return None
        if kind == "register" and name == "write":
            self.ctx.nargs(e, 2)
            val = self.ctx.expr_as(self.ctx.arg(e, 1), inst.elem_type, "register value")
            return V(f"{x}.write(st, {self.index_arg(e, 0)}, {val})", VoidT())
        if kind == "meter" and name == "execute_meter":
            self.ctx.nargs(e, 2)
            self.out_assign(self.ctx.arg(e, 1), f"{x}.execute_meter(st, {self.index_arg(e, 0)})", None, e.loc)
            return None
        if kind == "direct_meter" and name == "read":
            self.ctx.nargs(e, 1)
            self.out_assign(self.ctx.arg(e, 0), f"{x}.read(st)", None, e.loc)
            return None
        raise error(e.loc, f"{kind} has no method '{name}'")

    def index_arg(self, e: A.Call, i: int) -> str:
        v = self.ctx.value(self.ctx.arg(e, i))
        if not isinstance(v.type, (BitT, IntT)):
            raise error(self.ctx.arg(e, i).loc, f"index must be an integer, not {v.type}")
        return v.code

    def out_assign(self, target: A.Expr, code: str, t: Type | None, loc: Loc,
                   below: int | None = None) -> None:
        """Store an extern's result (an unbounded int, or one known to be ``< below``)
        into an out argument of any width."""
        self.ctx.check_lvalue(target)
        tt = self.ctx.type_of(target)
        if t is not None and not (tt is t or tt == t):
            raise error(target.loc, f"out argument must have type {t}, not {tt}")
        if isinstance(tt, BitT) and not tt.signed and below is not None and below <= tt.mask + 1:
            pass  # it fits: nothing to mask off
        elif isinstance(tt, BitT):
            code = f"({code}) & {tt.mask:#x}" if not tt.signed else \
                f"((({code}) & {tt.mask:#x} ^ {1 << (tt.width - 1)}) - {1 << (tt.width - 1)})"
        elif isinstance(tt, EnumT) and tt.underlying is not None:
            code = f"({code}) & {tt.underlying.mask:#x}"
        elif not isinstance(tt, (IntT,)):
            raise error(target.loc, f"out argument must be bit<W>, not {tt}")
        self.ctx.store(target, code, loc)

    def enum_member_name(self, e: A.Expr, enum: str) -> str:
        v = self.ctx.value(e)
        if not isinstance(v.type, EnumT) or v.type.name != enum or v.const is None:
            raise error(e.loc, f"expected a constant {enum}.<member>, got '{expr_text(e)}'")
        for n, val in v.type.members.items():
            if val == v.const:
                return n
        raise error(e.loc, f"bad {enum} value")

    def extern_function(self, e: A.Call, name: str) -> V | None:
        handler = getattr(self, "_x_" + name, None)
        if handler is None:
            raise unsupported(e.loc, f"extern function '{name}'",
                              "use the v1model/core functions the embedded target implements")
        return handler(e)

    def _x_verify(self, e: A.Call) -> V | None:
        if self.ctx.fn_kind != "parser":
            raise error(e.loc, "verify() is only allowed in a parser")
        self.ctx.nargs(e, 2)
        c = self.ctx.expr_as(self.ctx.arg(e, 0), BoolT(), "verify condition")
        code = self.ctx.expr_as(self.ctx.arg(e, 1), ErrorT(), "verify error")
        self.ctx.emit(f"if not {c}: raise ParserError({code}, pos)")
        return None

    def _x_mark_to_drop(self, e: A.Call) -> V | None:
        self.ctx.nargs(e, 1)
        self.ctx.value(self.ctx.arg(e, 0))
        return V("rt_mark_to_drop(st)", VoidT())

    def _x_hash(self, e: A.Call) -> V | None:
        self.ctx.nargs(e, 5)
        algo = self.enum_member_name(self.ctx.arg(e, 1), "HashAlgorithm")
        data, nbits, parts = self.ctx.flatten_bits(self.ctx.arg(e, 3))
        base = self.ctx.value(self.ctx.arg(e, 2))
        mx = self.ctx.value(self.ctx.arg(e, 4))
        for v, a in ((base, self.ctx.arg(e, 2)), (mx, self.ctx.arg(e, 4))):
            if not isinstance(v.type, (BitT, IntT)):
                raise error(a.loc, f"hash base and max must be integers, not {v.type}")
            if isinstance(v.type, IntT):  # their type parameters have nothing else to be inferred from
                raise error(a.loc, f"{expr_text(a)}: could not infer a width for hash's base or max; give it "
                            f"one, e.g. (bit<32>){expr_text(a)}")
        h = self.hash_call(algo, data, nbits, parts)  # type: ignore[arg-type]  # nbits and the parts' widths are ints once flattened from bit<W> values
        below = None
        if mx.const is not None:
            m = int(mx.const)
            code = f"{base.code} + {h} % {m}" if m > 0 else base.code
            if m > 0 and base.const == 0:  # v1model's range step with base 0: h % max
                code, below = f"{h} % {m}", m
        else:
            mv = self.ctx.tmp("max")
            self.ctx.emit(f"{mv} = {mx.code}")
            code = f"({base.code} + {h} % {mv} if {mv} > 0 else {base.code})"
        self.out_assign(self.ctx.arg(e, 0), code, None, e.loc, below)
        return None

    def _x_static_assert(self, e: A.Call) -> V | None:
        """``static_assert(check[, message])``: checked now; true when it holds."""
        self.ctx.nargs(e, 1, 2)
        check = self.ctx.value(self.ctx.arg(e, 0))
        if not isinstance(check.type, BoolT) or check.const is None:
            raise error(e.args[0].loc, "static_assert needs a bool known at compile time")
        if not check.const:
            message = self.ctx.value(self.ctx.arg(e, 1)).const if len(e.args) == 2 else None
            raise error(e.loc, "static_assert failed" + (f": {message}" if message else ""))
        return V("True", BoolT(), True)

    def _x_random(self, e: A.Call) -> V | None:
        self.ctx.nargs(e, 3)
        tt = self.ctx.lvalue_type(self.ctx.arg(e, 0))
        lo = self.ctx.expr_as(self.ctx.arg(e, 1), tt, "random lo")
        hi = self.ctx.expr_as(self.ctx.arg(e, 2), tt, "random hi")
        self.out_assign(self.ctx.arg(e, 0), f"rt_random(st, {lo}, {hi})", None, e.loc)
        return None

    def _checksum(self, e: A.Call, verify: bool, payload: bool) -> V | None:
        self.ctx.nargs(e, 4)
        cond = self.ctx.expr_as(self.ctx.arg(e, 0), BoolT(), "checksum condition")
        data, nbits, _ = self.ctx.flatten_bits(self.ctx.arg(e, 1))
        algo = self.enum_member_name(self.ctx.arg(e, 3), "HashAlgorithm")
        pl = f", {self.payload_code()}" if payload else ""
        ck = f"rt_checksum({algo!r}, {data}, {nbits}{pl})"
        self.ctx.emit(f"if {cond}:")
        self.ctx.indent()
        if verify:
            cv = self.ctx.value(self.ctx.arg(e, 2))
            if not isinstance(cv.type, BitT):
                raise error(self.ctx.arg(e, 2).loc, f"checksum field must be bit<W>, not {cv.type}")
            self.ctx.emit(f"if ({ck}) & {cv.type.mask:#x} != {cv.code}:")
            self.ctx.emit(f"    {self.ctx.sm_store('checksum_error', '1')}")
        else:
            self.out_assign(self.ctx.arg(e, 2), ck, None, e.loc)
        self.ctx.dedent()
        return None

    def _x_verify_checksum(self, e: A.Call) -> V | None:
        return self._checksum(e, True, False)

    def _x_update_checksum(self, e: A.Call) -> V | None:
        return self._checksum(e, False, False)

    def _x_verify_checksum_with_payload(self, e: A.Call) -> V | None:
        return self._checksum(e, True, True)

    def _x_update_checksum_with_payload(self, e: A.Call) -> V | None:
        return self._checksum(e, False, True)

    def _x_clone(self, e: A.Call) -> V | None:
        self.ctx.nargs(e, 2)
        kind = _CLONE_KIND[self.enum_member_name(self.ctx.arg(e, 0), "CloneType")]
        sess = self.ctx.value(self.ctx.arg(e, 1))
        return V(f"rt_clone(st, {kind}, {sess.code}, None)", VoidT())

    def _x_clone_preserving_field_list(self, e: A.Call) -> V | None:
        self.ctx.nargs(e, 3)
        kind = _CLONE_KIND[self.enum_member_name(self.ctx.arg(e, 0), "CloneType")]
        sess = self.ctx.value(self.ctx.arg(e, 1))
        fl = self.ctx.const_int(self.ctx.arg(e, 2), "field list index")
        return V(f"rt_clone(st, {kind}, {sess.code}, {fl})", VoidT())

    def _x_resubmit_preserving_field_list(self, e: A.Call) -> V | None:
        self.ctx.nargs(e, 1)
        return V(f"rt_resubmit(st, {self.ctx.const_int(self.ctx.arg(e, 0), 'field list index')})", VoidT())

    def _x_recirculate_preserving_field_list(self, e: A.Call) -> V | None:
        self.ctx.nargs(e, 1)
        return V(f"rt_recirculate(st, {self.ctx.const_int(self.ctx.arg(e, 0), 'field list index')})", VoidT())

    def _x_truncate(self, e: A.Call) -> V | None:
        self.ctx.nargs(e, 1)
        v = self.ctx.value(self.ctx.arg(e, 0))
        if not isinstance(v.type, (BitT, IntT)):
            raise error(self.ctx.arg(e, 0).loc, f"truncate length must be an integer, not {v.type}")
        return V(f"rt_truncate(st, {v.code})", VoidT())

    def _x_digest(self, e: A.Call) -> V | None:
        self.ctx.nargs(e, 2)
        self.ctx.value(self.ctx.arg(e, 0))
        data = self.ctx.arg(e, 1)
        if e.type_args:
            t = self.ctx.resolve_type(e.type_args[0])
        else:
            if isinstance(data, A.ListExpr):
                return self.list_digest(e, data)
            if isinstance(data, A.StructExpr):
                raise error(data.loc, "digest of a struct expression needs its type: digest<T>(receiver, {...})")
            t = self.ctx.type_of(data)
        if not isinstance(t, StructT) or t.kind != "struct":
            raise error(data.loc, f"digest data must be a struct, not {t}")
        obj = self.ctx.expr_as(data, t, "digest data")
        o = self.ctx.tmp("d")
        self.ctx.emit(f"{o} = {obj}")
        vals = [f"{o}.{pyfield(n)}" for n, _ in t.fields]
        self.ctx.note_digest(t, e.loc)
        return V(f"rt_digest(st, {t.name!r}, ({''.join(v + ', ' for v in vals)}))", VoidT())

    def list_digest(self, e: A.Call, data: A.ListExpr) -> V:
        """``digest(receiver, {a, b})``: a tuple digest named ``digest_<n>``, n its place
        among such calls in the source (p4c's P4Info name)."""
        if self._list_digests is None:
            self._list_digests = [n.loc for n in A.walk(self.ctx.program) if isinstance(n, A.Call)
                                  and isinstance(n.func, A.Name) and n.func.name == "digest" and not n.type_args
                                  and len(n.args) == 2 and isinstance(n.args[1].value, A.ListExpr)]
        name = f"digest_{self._list_digests.index(e.loc)}"
        values = [self.ctx.value(i) for i in data.items]
        fields = tuple(M.Field(str(i), self.ctx.wire_width(v.type, it.loc))
                       for i, (v, it) in enumerate(zip(values, data.items, strict=True)))
        self.ctx.digests[name] = M.Digest(name, fields, tuple_type=True)
        code = self.ctx.expr_as(data, TupleT(tuple(v.type for v in values)), "digest data")
        return V(f"rt_digest(st, {name!r}, {code})", VoidT())

    def _x_log_msg(self, e: A.Call) -> V | None:
        self.ctx.nargs(e, 1, 2)
        fmt = self.ctx.value(self.ctx.arg(e, 0))
        if not isinstance(fmt.type, StringT):
            raise error(self.ctx.arg(e, 0).loc, "log_msg needs a string format")
        args = "()"
        if len(e.args) == 2:
            a = self.ctx.arg(e, 1)
            items = a.items if isinstance(a, A.ListExpr) else [a]
            codes = []
            for it in items:
                v = self.ctx.value(it)
                codes.append(f"int({v.code})")
            args = "(" + "".join(c + ", " for c in codes) + ")"
        return V(f"rt_log_msg(st, {fmt.code}, {args})", VoidT())

    def _x_assert(self, e: A.Call) -> V | None:
        self.ctx.nargs(e, 1)
        c = self.ctx.expr_as(self.ctx.arg(e, 0), BoolT(), "assert condition")
        return V(f"rt_assert(st, {c}, {str(e.loc)!r})", VoidT())

    _x_assume = _x_assert

    def hash_call(self, algo: str, data: str, nbits: int, parts: list[tuple[str, int]]) -> str:
        """Code for the raw hash of the bit string ``data`` (Bindings.hash); ``parts``
        are its fields (code, width), most significant first."""
        return f"rt_hash({algo!r}, {data}, {nbits})"

    def payload_code(self) -> str:
        """Code for the bytes the parser did not extract."""
        return "st.payload"
