"""Typing and code generation of P4 expressions (one pass: type, check, emit Python).

Every expression becomes a Python expression string together with its P4 type and,
when known at compile time, its value. Width rules follow the P4_16 spec: operands of
a binary operator must have the same type (unsized literals adopt the other side's
type), results wrap at the type's width, and masking is emitted only where a result
can leave its range.
"""

from __future__ import annotations

from p4target.compiler.context import CompilerContext
from p4target.compiler import support
from p4target.compiler.naming import pyfield
from p4target.compiler.scope import Sym
from p4target.compiler.values import V, lit
from p4target.compiler.types import (
    BitT, BoolT, EnumT, ErrorT, ExternT, IntT, ObjT, StackT, StringT, StructT, TupleT,
    Type, VarbitT, bit_width,
)
from p4target.frontend import ast as A
from p4target.frontend.source import Loc, error, unsupported

MAX_WIDTH = 2048  # the widest integer p4c computes with
_EVAL_GLOBALS = {"__builtins__": {}, "min": min, "max": max, "int": int, "bool": bool,
                 "div": support.div, "mod": support.mod, "shl": support.shl}


def wrap_signed(code: str, width: int) -> str:
    h = 1 << (width - 1)
    return f"((({code}) + {h} & {(1 << width) - 1}) - {h})"


def to_type_const(value: int, t: Type) -> int:
    """An infinite-precision integer converted to bit<W>/int<W> (two's complement wrap)."""
    if isinstance(t, BitT):
        v = value & t.mask
        if t.signed and v >> (t.width - 1):
            v -= 1 << t.width
        return v
    if isinstance(t, EnumT) and t.underlying is not None:
        return value & t.underlying.mask
    return value


class ExpressionCompiler:
    """The expressions of the program compiler ``ctx``: each typed, checked and turned
    into code (``V``). The statements that an expression needs before it (a call's
    copy-out, a temporary) are emitted through ``ctx``; a call is the statement
    compiler's (``ctx.call_expr``). ``FastExpressionCompiler`` (fast_expressions.py)
    is the fast compiler's."""

    def __init__(self, ctx: CompilerContext) -> None:
        self.ctx = ctx

    # ------------------------------------------------------------------ entry points
    def expr(self, e: A.Expr) -> V:
        method = getattr(self, "_e_" + type(e).__name__, None)
        if method is None:
            raise unsupported(e.loc, f"expression {type(e).__name__}", "rewrite it")
        v = method(e)
        if v.const is not None and not isinstance(v.const, str) and v.code != repr(v.const):
            v = V(repr(v.const), v.type, v.const, v.sym, v.path)
        return v

    def value(self, e: A.Expr) -> V:
        """An expression that must be a value (not a table, extern, type...)."""
        v = self.expr(e)
        if v.sym is not None and v.sym.kind not in ("var", "const"):
            raise error(e.loc, f"'{expr_text(e)}' is a {v.sym.kind}, not a value")
        return v

    def const_int(self, e: A.Expr, what: str = "value") -> int:
        v = self.value(e)
        if v.const is None or isinstance(v.const, (str, bool)):
            raise error(e.loc, f"{what} must be a compile-time integer constant; "
                        f"'{expr_text(e)}' is not")
        return int(v.const)

    def expr_as(self, e: A.Expr, t: Type, what: str = "value") -> str:
        """Code for ``e`` converted implicitly to ``t`` (assignment, argument passing)."""
        if isinstance(e, (A.ListExpr, A.StructExpr)) and isinstance(t, StructT):
            return self.build_struct(e, t)
        if isinstance(e, A.ListExpr) and isinstance(t, TupleT):
            if len(e.items) != len(t.elems):
                raise error(e.loc, f"{what}: expected {len(t.elems)} elements, got {len(e.items)}")
            return "(" + "".join(c + ", " for c in self.in_order([(i, et, what) for i, et in zip(e.items, t.elems, strict=False)])) + ")"
        return self.coerce(self.value(e), t, e.loc, what)

    def coerce(self, v: V, t: Type, loc: Loc, what: str = "value") -> str:
        vt = v.type
        if isinstance(t, (BitT, EnumT)) and isinstance(vt, IntT):
            if isinstance(t, EnumT):
                raise error(loc, f"{what}: cannot use an integer as {t}; use {t.name}.<member>")
            return repr(to_type_const(known_int(v, loc), t))
        if isinstance(t, BitT) and isinstance(vt, EnumT) and vt.underlying == t:
            return v.code  # a serializable enum converts to its underlying type (P4_16 8.3)
        if isinstance(t, BitT) and isinstance(vt, BitT):
            if t == vt:
                return v.code
            raise error(loc, f"{what}: cannot convert {vt} to {t} implicitly; add a cast ({t})")
        if isinstance(t, IntT) and isinstance(vt, (IntT, BitT)):
            return v.code
        if isinstance(t, BoolT) and isinstance(vt, BoolT):
            return v.code
        if isinstance(t, StructT) and isinstance(vt, StructT) and t is vt:
            return f"{v.code}.copy()"
        if isinstance(t, StackT) and isinstance(vt, StackT) and vt.elem is t.elem and vt.size == t.size:
            return f"{v.code}.copy()"
        if isinstance(t, TupleT) and t == vt and any(isinstance(et, (StructT, StackT)) for et in t.elems):
            return f"tuple(_x.copy() if hasattr(_x, 'copy') else _x for _x in {v.code})"  # a value: its own headers
        if type(t) is type(vt) and isinstance(t, (ErrorT, StringT, VarbitT, TupleT)) and t == vt:
            return v.code
        if isinstance(t, EnumT) and vt is t:
            return v.code
        raise error(loc, f"{what}: type mismatch, expected {t} but got {vt}")

    # ------------------------------------------------------------------ literals, names
    def _e_IntLit(self, e: A.IntLit) -> V:
        if e.width is None:
            return lit(e.value, IntT())
        t = BitT(e.width, e.signed)
        return lit(to_type_const(e.value, t), t)

    def _e_BoolLit(self, e: A.BoolLit) -> V:
        return lit(e.value, BoolT())

    def _e_StrLit(self, e: A.StrLit) -> V:
        return V(repr(e.value), StringT(), e.value)

    def _e_TypeNameExpr(self, e: A.TypeNameExpr) -> V:
        return V("", ErrorT(), None, Sym("type", ErrorT()))

    def _e_Name(self, e: A.Name) -> V:
        sym = self.ctx.global_scope.lookup(e.name) if e.top else self.ctx.scope.lookup(e.name)
        if sym is None:
            t = self.ctx.type_names.get(e.name)
            if t is not None:
                return V("", t, None, Sym("type", t))
            raise error(e.loc, f"unknown name '{e.name}'; declare it before use")
        if sym.kind == "const":
            return V(repr(sym.const), sym.type, sym.const)  # type: ignore[arg-type]  # a const symbol has a type
        if sym.kind == "var":
            self.ctx.note_use(sym)
            return V(sym.code, sym.type, None, sym)  # type: ignore[arg-type]  # a var symbol has a type
        return V(sym.code, sym.type or ObjT(sym.kind, e.name), None, sym)

    def _e_Member(self, e: A.Member) -> V:
        base = self.expr(e.obj)
        bt = base.type
        if base.sym is not None and base.sym.kind == "type":
            return self.type_member(e, bt)
        if isinstance(bt, StructT):
            ft = bt.field_type(e.name)
            if ft is None:
                raise error(e.loc, f"{bt} has no field '{e.name}'; the fields are "
                            + ", ".join(n for n, _ in bt.fields))
            return V(f"{base.code}.{pyfield(e.name)}", ft)
        if isinstance(bt, StackT):
            return self.stack_member(e, base, bt)
        if base.sym is not None and base.sym.kind == "tableresult":
            return self.table_result_member(e, base)
        if base.sym is not None and base.sym.kind in ("table", "instance", "packet_in",
                                                         "packet_out"):
            return V(base.code, ObjT("method", e.name), None,
                     Sym("method", None, base.code, obj=(base, e.name)))
        raise error(e.loc, f"'{expr_text(e.obj)}' of type {bt} has no member '{e.name}'")

    def type_member(self, e: A.Member, bt: Type) -> V:
        """``error.X`` or ``Enum.X``."""
        if isinstance(bt, ErrorT):
            code = self.ctx.errors_by_name.get(e.name)
            if code is None:
                raise error(e.loc, f"unknown error 'error.{e.name}'; declare it in an error {{}} block")
            return lit(code, ErrorT())
        if isinstance(bt, EnumT):
            if e.name not in bt.members:
                raise error(e.loc, f"enum {bt.name} has no member '{e.name}'")
            return V(repr(bt.members[e.name]), bt, bt.members[e.name])
        raise error(e.loc, f"type {bt} has no member '{e.name}'")

    def stack_member(self, e: A.Member, base: V, bt: StackT) -> V:
        """``s.size``, ``s.next``, ``s.last``, ``s.lastIndex``, ``s.nextIndex``."""
        if e.name == "size":
            return lit(bt.size, BitT(32))
        if e.name in ("next", "last", "lastIndex") and self.ctx.fn_kind != "parser":
            raise error(e.loc, f"'{e.name}' of a header stack can only be used in a parser "
                        "(as in p4c); use an index or keep the value in metadata")
        if e.name == "lastIndex":
            return V(f"(({base.code}.nxt - 1) & 0xffffffff)", BitT(32))
        if e.name == "nextIndex":
            return V(f"{base.code}.nxt", BitT(32))
        if e.name == "last":
            if self.ctx.fn_kind == "parser":
                code = self.ctx.errors_by_name["StackOutOfBounds"]
                return V(f"{base.code}.last_in_parser(pos, {code})", bt.elem)
            return V(f"{base.code}.at({base.code}.nxt - 1)", bt.elem)
        if e.name == "next":
            return V(f"{base.code}.at({base.code}.nxt)", bt.elem)
        raise error(e.loc, f"header stack has no member '{e.name}'; use size, next, last, "
                    "lastIndex, nextIndex, push_front, pop_front or [i]")

    @staticmethod
    def table_result_member(e: A.Member, base: V) -> V:
        """``t.apply().hit``, ``.miss``, ``.action_run``."""
        if e.name == "hit":
            return V(f"{base.code}[1]", BoolT())
        if e.name == "miss":
            return V(f"(not {base.code}[1])", BoolT())
        if e.name == "action_run":
            return V(f"{base.code}[0]", ObjT("action_run", ""), None,
                     Sym("action_run", None, f"{base.code}[0]", obj=base.sym.obj))  # type: ignore[union-attr]  # a table result's symbol (checked by the caller)
        raise error(e.loc, f"a table apply result has no member '{e.name}'; use hit, miss "
                    "or action_run")

    def _e_Index(self, e: A.Index) -> V:
        base = self.value(e.obj)
        if isinstance(base.type, TupleT):
            i = self.const_int(e.index, "tuple index")
            if not 0 <= i < len(base.type.elems):
                raise error(e.loc, f"index {i} is out of range for {base.type}")
            return V(f"{base.code}[{i}]", base.type.elems[i])
        if not isinstance(base.type, StackT):
            raise error(e.loc, f"'{expr_text(e.obj)}' is not a header stack or tuple; only those can be indexed")
        idx = self.value(e.index)
        if isinstance(idx.type, EnumT) and idx.type.underlying is not None:  # a serializable enum: its value
            idx = V(idx.code, idx.type.underlying, idx.const)
        if idx.const is not None:
            i = int(idx.const)
            if not 0 <= i < base.type.size:
                raise error(e.loc, f"index {i} is out of range for a stack of size {base.type.size}")
            return V(f"{base.code}.h[{i}]", base.type.elem)
        if not isinstance(idx.type, BitT):
            raise error(e.index.loc, f"stack index must be bit<W> or int, not {idx.type}")
        return V(f"{base.code}.at({idx.code})", base.type.elem)

    def _e_Slice(self, e: A.Slice) -> V:
        base = self.value(e.obj)
        if isinstance(base.type, IntT) and base.const is not None:
            pass
        elif not isinstance(base.type, BitT):
            raise error(e.loc, f"cannot slice a value of type {base.type}; slices need bit<W> or int<W>")
        hi = self.const_int(e.hi, "slice bound")
        lo = self.const_int(e.lo, "slice bound")
        width = bit_width(base.type) if isinstance(base.type, BitT) else hi + 1
        if not (0 <= lo <= hi < width):
            raise error(e.loc, f"slice [{hi}:{lo}] is out of range for {base.type}; "
                        f"bounds must satisfy {width - 1} >= hi >= lo >= 0")
        w = hi - lo + 1
        mask = (1 << w) - 1
        code = f"(({base.code} >> {lo}) & {mask:#x})" if lo else f"({base.code} & {mask:#x})"
        if isinstance(base.type, BitT) and not base.type.signed and hi == width - 1:
            # the top bits: nothing above them to mask off (a value fits its type)
            code = f"({base.code} >> {lo})" if lo else base.code
        if isinstance(base.type, BitT) and base.type.signed:
            code = f"(({base.code} & {(1 << width) - 1:#x}) >> {lo} & {mask:#x})"
        return self.folded(code, BitT(w), base.const is not None)

    def folded(self, code: str, t: Type, all_const: bool) -> V:
        if all_const:
            val = eval(code, _EVAL_GLOBALS)  # code built from literals only
            return V(repr(val), t, val)
        return V(code, t)

    # ------------------------------------------------------------------ operators
    def _e_Unary(self, e: A.Unary) -> V:
        v = self.value(e.operand)
        t = v.type
        c = v.const is not None
        if e.op == "!":
            if not isinstance(t, BoolT):
                raise error(e.loc, f"'!' needs a bool operand, not {t}; compare with 0 instead")
            return self.folded(f"(not {v.code})", t, c)
        if e.op == "~":
            if isinstance(t, BitT):
                if t.signed:
                    return self.folded(f"(~{v.code})", t, c)
                return self.folded(f"({v.code} ^ {t.mask:#x})", t, c)
            raise error(e.loc, f"'~' needs a bit<W> operand, not {t}")
        if e.op == "-":
            if isinstance(t, IntT):
                return self.folded(f"(-{v.code})", t, c)
            if isinstance(t, BitT):
                if t.signed:
                    return self.folded(wrap_signed(f"-{v.code}", t.width), t, c)
                return self.folded(f"(-{v.code} & {t.mask:#x})", t, c)
            raise error(e.loc, f"unary '-' needs a numeric operand, not {t}")
        raise unsupported(e.loc, f"operator '{e.op}'", "rewrite the expression")

    def composite_eq(self, a: str, b: str, t: StructT | StackT) -> str:
        """Code for ``a == b`` on headers, unions, stacks and structs (P4_16 8.17-8.19):
        two headers are equal when both are invalid, or both valid with all fields
        equal; unions member by member (at most one member is valid); stacks element
        by element (``nextIndex`` is not part of the value); structs field by field."""
        if isinstance(t, StackT):
            x, y = self.ctx.tmp("x"), self.ctx.tmp("y")
            return f"all({self.composite_eq(x, y, t.elem)} for {x}, {y} in zip({a}.h, {b}.h))"
        parts = []
        for n, ft in t.fields:
            f = pyfield(n)
            if isinstance(ft, (StructT, StackT)):
                parts.append(f"({self.composite_eq(f'{a}.{f}', f'{b}.{f}', ft)})")
            else:
                parts.append(f"{a}.{f} == {b}.{f}")
                if isinstance(ft, VarbitT):
                    parts.append(f"{a}._len_{n} == {b}._len_{n}")
        fields = " and ".join(parts) or "True"
        if t.kind == "header":
            return f"{a}._v == {b}._v and (not {a}._v or ({fields}))"
        return fields

    def unify(self, left: V, r: V, loc: Loc, op: str) -> tuple[str, str, Type]:
        lt, rt = left.type, r.type
        # a serializable enum next to a bit<W> value is its underlying type (P4_16 8.3)
        if isinstance(lt, EnumT) and lt.underlying is not None and isinstance(rt, BitT):
            lt = lt.underlying
        elif isinstance(rt, EnumT) and rt.underlying is not None and isinstance(lt, BitT):
            rt = rt.underlying
        if isinstance(lt, IntT) and isinstance(rt, IntT):
            return left.code, r.code, lt
        if isinstance(lt, IntT) and isinstance(rt, BitT):
            return repr(to_type_const(known_int(left, loc), rt)), r.code, rt
        if isinstance(rt, IntT) and isinstance(lt, BitT):
            return left.code, repr(to_type_const(known_int(r, loc), lt)), lt
        if isinstance(lt, BitT) and isinstance(rt, BitT):
            if lt != rt:
                raise error(loc, f"operands of '{op}' have different types {lt} and {rt}; "
                            "cast one side so both have the same width and signedness")
            return left.code, r.code, lt
        if isinstance(lt, EnumT) and lt.underlying is not None and isinstance(rt, (IntT,)):
            return left.code, repr(known_int(r, loc)), lt
        if type(lt) is type(rt) and (lt == rt or lt is rt) and op in ("==", "!="):
            return left.code, r.code, lt
        raise error(loc, f"operands of '{op}' have incompatible types {lt} and {rt}")

    # ------------------------------------------------------------------ evaluation order
    # P4_16 8.1: operands left to right, `&&`/`||` short-circuit, `?:` evaluates one
    # branch. A call with effects emits statements before the expression that uses
    # its result, so where a later operand has effects (has_effects), the operands
    # before it are kept in temporaries first, and `&&`, `||`, `?:` become if blocks.
    def spill_value(self, v: V) -> V:
        """``v`` evaluated now into a temporary (constants stay as they are)."""
        if v.const is not None:
            return v
        t = self.ctx.tmp("v")
        code = f"{v.code}.copy()" if isinstance(v.type, (StructT, StackT)) else v.code
        self.ctx.emit(f"{t} = {code}")
        return V(t, v.type)

    def short_circuit(self, e: A.Binary) -> V:
        """``a && b`` / ``a || b`` whose right operand has effects: ``b`` (and its
        effects) only when ``a`` does not decide."""
        left = self.value(e.left)
        if not isinstance(left.type, BoolT):
            raise error(e.left.loc, f"'{e.op}' needs bool operands, not {left.type}")
        t = self.ctx.tmp("b")
        self.ctx.emit(f"{t} = {left.code}")
        self.ctx.emit(f"if {t}:" if e.op == "&&" else f"if not {t}:")
        self.ctx.indent()
        r = self.value(e.right)
        if not isinstance(r.type, BoolT):
            raise error(e.right.loc, f"'{e.op}' needs bool operands, not {r.type}")
        self.ctx.emit(f"{t} = {r.code}")
        self.ctx.dedent()
        return V(t, BoolT())

    def conditional(self, e: A.Ternary, cond: V) -> V:
        """``c ? x : y`` with effects in a branch: only the chosen branch runs."""
        t = self.ctx.tmp("c")
        self.ctx.emit(f"if {cond.code}:")
        self.ctx.indent()
        a = self.value(e.then)
        at = len(self.ctx.out)
        self.ctx.emit("")  # the assignment, once both branch types are known
        self.ctx.dedent()
        self.ctx.emit("else:")
        self.ctx.indent()
        b = self.value(e.other)
        ac, bc, ty = self.unify(a, b, e.loc, "?:") if not (
            isinstance(a.type, BoolT) and isinstance(b.type, BoolT)) else (a.code, b.code, a.type)
        if isinstance(ty, IntT):
            raise error(e.loc, "both branches of ?: are unsized integers; give one a width")
        self.ctx.emit(f"{t} = {bc}")
        self.ctx.out[at] = f"{self.ctx.ind}{t} = {ac}"
        self.ctx.dedent()
        return V(t, ty)

    def _e_Binary(self, e: A.Binary) -> V:
        op = e.op
        if op in ("&&", "||") and self.ctx.has_effects(e.right):
            return self.short_circuit(e)
        left = self.value(e.left)
        if self.ctx.has_effects(e.right):
            left = self.spill_value(left)
        r = self.value(e.right)
        c = left.const is not None and r.const is not None
        if op in ("&&", "||"):
            for v, side in ((left, e.left), (r, e.right)):
                if not isinstance(v.type, BoolT):
                    raise error(side.loc, f"'{op}' needs bool operands, not {v.type}")
            return self.folded(f"({left.code} {'and' if op == '&&' else 'or'} {r.code})", BoolT(), c)
        if op in ("==", "!="):
            if isinstance(left.type, (StructT, StackT)) or isinstance(r.type, (StructT, StackT)):
                if not (left.type is r.type or left.type == r.type):
                    raise error(e.loc, f"operands of '{op}' have different types {left.type} and {r.type}")
                eq = self.composite_eq(left.code, r.code, left.type)  # type: ignore[arg-type]  # both are the same struct or stack type (checked just above)
                return V(f"({eq})" if op == "==" else f"(not ({eq}))", BoolT())
            lc, rc, _ = self.unify(left, r, e.loc, op)
            return self.folded(f"({lc} {op} {rc})", BoolT(), c)
        if op in ("<", ">", "<=", ">="):
            lc, rc, t = self.unify(left, r, e.loc, op)
            if not isinstance(t, (BitT, IntT)):
                raise error(e.loc, f"'{op}' needs numeric operands, not {t}")
            return self.folded(f"({lc} {op} {rc})", BoolT(), c)
        if op in ("<<", ">>"):
            return self.shift(e, left, r, c)
        if op == "++":
            return self.concat(e, left, r, c)
        return self.arith(e, left, r, c)

    def concat(self, e: A.Binary, left: V, r: V, c: bool) -> V:
        """``a ++ b``."""
        lt, rt = left.type, r.type
        if not isinstance(lt, BitT) or not isinstance(rt, BitT):
            raise error(e.loc, f"'++' needs operands with a width (bit<W>/int<W>), not {lt} and {rt}; "
                        "give literals a width such as 16w0")
        rcode = r.code if not rt.signed else f"({r.code} & {rt.mask:#x})"
        lcode = left.code if not lt.signed else f"({left.code} & {lt.mask:#x})"
        t = BitT(lt.width + rt.width, lt.signed)
        code = f"(({lcode} << {rt.width}) | {rcode})"
        if r.const == 0 and not rt.signed:  # x ++ 16w0: nothing to or in
            code = f"({lcode} << {rt.width})"
        if t.signed:
            code = f"(({code} ^ {1 << (t.width - 1)}) - {1 << (t.width - 1)})"
        return self.folded(code, t, c)

    def arith(self, e: A.Binary, left: V, r: V, c: bool) -> V:
        """``+ - * / % & | ^ |+| |-|``."""
        op = e.op
        if op not in ("+", "-", "*", "/", "%", "&", "|", "^", "|+|", "|-|"):
            raise unsupported(e.loc, f"operator '{op}'", "rewrite the expression")
        lc, rc, t = self.unify(left, r, e.loc, op)
        if isinstance(t, IntT):
            pyop = {"/": "//", "|+|": "+", "|-|": "-"}.get(op, op)
            if not c and op not in ("+", "-", "*"):  # (int)x + 1: exact, as Python's int
                raise error(e.loc, f"'{op}' on unsized integers needs constants")
            return self.folded(f"({lc} {pyop} {rc})", t, c)
        if not isinstance(t, BitT):
            raise error(e.loc, f"'{op}' needs bit<W> or int<W> operands, not {t}")
        m = t.mask
        if op in ("&", "|", "^"):
            return self.folded(f"({lc} {op} {rc})", t, c)
        if op in ("/", "%"):
            if t.signed:
                raise unsupported(e.loc, f"'{op}' on signed int<W>", "use bit<W> operands")
            return self.folded(f"{'div' if op == '/' else 'mod'}({lc}, {rc})", t, c)
        if op == "|+|":
            if t.signed:
                h = 1 << (t.width - 1)
                return self.folded(f"max(min({lc} + {rc}, {h - 1}), {-h})", t, c)
            return self.folded(f"min({lc} + {rc}, {m:#x})", t, c)
        if op == "|-|":
            if t.signed:
                h = 1 << (t.width - 1)
                return self.folded(f"max(min({lc} - {rc}, {h - 1}), {-h})", t, c)
            return self.folded(f"max({lc} - {rc}, 0)", t, c)
        raw = f"{lc} {op} {rc}"
        if t.signed:
            return self.folded(wrap_signed(raw, t.width), t, c)
        return self.folded(f"(({raw}) & {m:#x})", t, c)

    def shift(self, e: A.Binary, left: V, r: V, c: bool) -> V:
        lt, rt = left.type, r.type
        if isinstance(rt, BitT) and rt.new_type:
            raise error(e.right.loc, f"shift amount must be bit<W> or a non-negative integer, not type "
                        f"{rt.new_type}; cast it: (bit<{rt.width}>)")
        if isinstance(rt, BitT) and rt.signed:
            raise error(e.right.loc, "shift amount must be unsigned (bit<W> or a non-negative literal)")
        if isinstance(rt, IntT) and known_int(r, e.right.loc) < 0:
            raise error(e.right.loc, "shift amount must not be negative")
        if not isinstance(rt, (BitT, IntT)):
            raise error(e.right.loc, f"shift amount must be an integer, not {rt}")
        if isinstance(lt, IntT):
            if not c:
                raise error(e.loc, "shifting an unsized integer by a run-time amount; give it a width")
            if e.op == "<<" and int(r.const) > MAX_WIDTH:  # type: ignore[arg-type]  # checked constant above
                raise error(e.loc, f"shifting an unsized integer left by {r.const} bits; integers are at "
                            f"most {MAX_WIDTH} bits wide (as in p4c)")
            return self.folded(f"({left.code} {e.op} {r.code})", lt, True)
        if not isinstance(lt, BitT):
            raise error(e.left.loc, f"cannot shift a value of type {lt}")
        if e.op == ">>":
            if lt.signed or r.const is not None:
                return self.folded(f"({left.code} >> {r.code})", lt, c)
            return self.folded(f"({left.code} >> {r.code})", lt, c)
        if r.const is not None:
            amount = int(r.const)
            if amount >= lt.width:
                return self.folded("0", lt, True) if not lt.signed else lit(0, lt)
            if lt.signed:
                return self.folded(wrap_signed(f"{left.code} << {amount}", lt.width), lt, c)
            return self.folded(f"(({left.code} << {amount}) & {lt.mask:#x})", lt, c)
        if lt.signed:
            return V(wrap_signed(f"shl({left.code} & {lt.mask:#x}, {r.code}, {lt.width})", lt.width), lt)
        return V(f"shl({left.code}, {r.code}, {lt.width})", lt)

    def _e_Ternary(self, e: A.Ternary) -> V:
        cond = self.value(e.cond)
        if not isinstance(cond.type, BoolT):
            raise error(e.cond.loc, f"condition must be bool, not {cond.type}")
        if self.ctx.has_effects(e.then) or self.ctx.has_effects(e.other):
            if cond.const is not None:  # only the chosen branch, and its effects
                return self.value(e.then if cond.const else e.other)
            return self.conditional(e, cond)
        a = self.value(e.then)
        b = self.value(e.other)
        ac, bc, t = self.unify(a, b, e.loc, "?:") if not (
            isinstance(a.type, BoolT) and isinstance(b.type, BoolT)) else (a.code, b.code, a.type)
        if isinstance(t, IntT) and cond.const is None:
            raise error(e.loc, "both branches of ?: are unsized integers; give one a width")
        return self.folded(f"({ac} if {cond.code} else {bc})", t,
                           cond.const is not None and a.const is not None and b.const is not None)

    def _e_Cast(self, e: A.Cast) -> V:
        t = self.ctx.resolve_type(e.type)
        v = self.value(e.expr)
        return self.cast(v, t, e.loc)

    def cast(self, v: V, t: Type, loc: Loc) -> V:
        vt = v.type
        c = v.const is not None
        if isinstance(t, BitT):
            done = self.cast_to_bits(v, t, loc)
            if done is not None:
                return done
        if isinstance(t, BoolT):
            if isinstance(vt, BoolT):
                return v
            if isinstance(vt, BitT) and vt.width == 1 and not vt.signed:
                return self.folded(f"({v.code} == 1)", t, c)
            if isinstance(vt, IntT) and v.const in (0, 1):
                return lit(bool(v.const), t)
        if isinstance(t, IntT) and isinstance(vt, (IntT, BitT)):
            return V(v.code, t, v.const)
        if isinstance(t, EnumT) and t.underlying is not None:
            if isinstance(vt, (BitT, IntT)):
                inner = self.cast(v, t.underlying, loc) if isinstance(vt, IntT) or vt != t.underlying else v
                return V(inner.code, t, inner.const)
            if vt is t:
                return v
        if isinstance(t, StructT) and vt is t:
            return v
        if type(t) is type(vt) and t == vt:
            return v
        raise error(loc, f"cannot cast {vt} to {t}")

    def cast_to_bits(self, v: V, t: BitT, loc: Loc) -> V | None:
        """``(bit<W>) v`` / ``(int<W>) v``, or None when ``v``'s type does not convert."""
        vt = v.type
        c = v.const is not None
        if isinstance(vt, IntT) and not c:  # (bit<W>)((int)x + 1): wraps to the width
            h = 1 << (t.width - 1)
            return V(f"((({v.code}) & {t.mask:#x} ^ {h}) - {h})" if t.signed else f"(({v.code}) & {t.mask:#x})", t)
        if isinstance(vt, IntT):
            return lit(to_type_const(int(v.const), t), t)  # type: ignore[arg-type]  # an int/bit constant: const is an int
        if isinstance(vt, BoolT):
            if t.width != 1 or t.signed:
                raise error(loc, f"cannot cast bool to {t}; only bit<1> holds a bool")
            return self.folded(f"int({v.code})", t, c)
        if isinstance(vt, EnumT) and vt.underlying is not None:
            vt = vt.underlying
        if not isinstance(vt, BitT):
            return None
        # int<W> -> int<V> sign-extends or wraps; bit -> bit zero-extends or
        # truncates; a change of signedness reinterprets the bits at the new width.
        h = 1 << (t.width - 1)
        if vt.signed and t.signed:
            code = v.code if t.width >= vt.width else wrap_signed(v.code, t.width)
        elif vt.signed:
            code = f"({v.code} & {t.mask:#x})"
        elif t.signed:
            code = f"((({v.code}) & {t.mask:#x} ^ {h}) - {h})"
        else:
            code = v.code if t.width >= vt.width else f"({v.code} & {t.mask:#x})"
        return self.folded(code, t, c)

    def in_order(self, items: list[tuple[A.Expr, Type, str]]) -> list[str]:
        """Codes of ``(expression, type, what)`` items evaluated left to right: where a
        later item has side effects, the ones before it are kept in temporaries."""
        codes = []
        for k, (x, t, what) in enumerate(items):
            code = self.expr_as(x, t, what)
            if any(self.ctx.has_effects(y) for y, _, _ in items[k + 1:]) and not code.lstrip("-").isdigit():
                tmp = self.ctx.tmp("v")
                self.ctx.emit(f"{tmp} = {code}")
                code = tmp
            codes.append(code)
        return codes

    def _e_ListExpr(self, e: A.ListExpr) -> V:
        items = []
        for k, i in enumerate(e.items):
            v = self.value(i)
            items.append(self.spill_value(v) if any(self.ctx.has_effects(y) for y in e.items[k + 1:]) else v)
        return V("(" + "".join(i.code + ", " for i in items) + ")",
                 TupleT(tuple(i.type for i in items)))

    def _e_StructExpr(self, e: A.StructExpr) -> V:
        raise error(e.loc, "a { field = value } initializer needs a known struct type; "
                    "assign it to a variable or parameter of that type")

    def build_struct(self, e: A.ListExpr | A.StructExpr, t: StructT) -> str:
        if isinstance(e, A.ListExpr):
            if len(e.items) != len(t.fields):
                raise error(e.loc, f"{t} has {len(t.fields)} fields but the list has {len(e.items)}")
            vals = self.in_order([(i, ft, f"field {n}") for i, (n, ft) in zip(e.items, t.fields, strict=False)])
        else:
            given = dict(e.fields)
            for n in given:
                if t.field_type(n) is None:
                    raise error(e.loc, f"{t} has no field '{n}'")
            missing = [n for n, _ in t.fields if n not in given]
            if missing:
                raise error(e.loc, f"initializer for {t} lacks fields {', '.join(missing)}")
            types = dict(t.fields)
            by_name = dict(zip(given, self.in_order([(x, types[n], f"field {n}") for n, x in e.fields]), strict=False))
            vals = [by_name[n] for n, _ in t.fields]
        return f"mk_{t.pyname}(" + ", ".join(vals) + ")"

    def _e_DefaultExpr(self, e: A.DefaultExpr) -> V:
        raise error(e.loc, "'default'/'_' is only allowed in select cases, entries and switch labels")

    def _e_Mask(self, e: A.Mask) -> V:
        raise error(e.loc, "'&&&' is only allowed in select cases and table entries")

    def _e_Range(self, e: A.Range) -> V:
        raise error(e.loc, "'..' is only allowed in select cases and table entries")

    def _e_Call(self, e: A.Call) -> V:
        return self.ctx.call_expr(e)  # provided by the statement compiler

    # ------------------------------------------------------------------ bit strings
    def flatten_bits(self, e: A.Expr) -> tuple[str, int | str, list[tuple[str, int | str]]]:
        """A list/struct/header/value as one bit string: (code, width, parts).

        Used for hash, checksum and digest data: fields concatenated MSB first. A
        varbit field contributes its current bits: its part's width, and then the
        total width, is code (the header's ``_len_`` attribute) rather than a number.
        """
        parts: list[tuple[str, int | str]] = []
        self._flatten(e, parts)
        code = "0"
        fixed = 0
        dynamic: list[str] = []
        for i, (pc, w) in enumerate(parts):
            code = pc if i == 0 else f"(({code}) << {w}) | {pc}"
            if isinstance(w, int):
                fixed += w
            else:
                dynamic.append(w)
        total: int | str = fixed if not dynamic else "(" + " + ".join([str(fixed)] + dynamic) + ")"
        return (f"({code})" if parts else "0"), total, parts

    def _flatten(self, e: A.Expr, parts: list[tuple[str, int | str]]) -> None:
        if isinstance(e, A.ListExpr):
            for i in e.items:
                self._flatten(i, parts)
            return
        v = self.value(e)
        if isinstance(v.type, VarbitT) and isinstance(e, A.Member):
            parent = self.value(e.obj)  # the header: its _len_ attribute is the width
            parts.append((v.code, f"{parent.code}._len_{e.name}"))
            return
        self._flatten_v(v, parts, e.loc)

    def _flatten_v(self, v: V, parts: list[tuple[str, int | str]], loc: Loc) -> None:
        t = v.type
        if isinstance(t, StructT):
            for n, ft in t.fields:
                if isinstance(ft, VarbitT):  # its current bits
                    parts.append((f"{v.code}.{pyfield(n)}", f"{v.code}._len_{n}"))
                    continue
                self._flatten_v(V(f"{v.code}.{pyfield(n)}", ft), parts, loc)
            return
        if isinstance(t, TupleT):
            for i, et in enumerate(t.elems):
                self._flatten_v(V(f"{v.code}[{i}]", et), parts, loc)
            return
        if isinstance(t, BitT):
            parts.append((v.code if not t.signed else f"({v.code} & {t.mask:#x})", t.width))
            return
        if isinstance(t, BoolT):
            parts.append((f"int({v.code})", 1))
            return
        if isinstance(t, EnumT) and t.underlying is not None:
            parts.append((v.code, t.underlying.width))
            return
        if isinstance(t, IntT):
            raise error(loc, "an unsized integer in a field list has no width; write it as 8w5 or cast it")
        raise error(loc, f"a value of type {t} cannot be part of a bit string")


def known_int(v: V, loc: Loc) -> int:
    """The value of an unsized integer; one computed at run time (``(int)x``) has no
    width to take here."""
    if v.const is None:
        raise error(loc, "an unsized integer computed at run time has no width here; cast it to bit<W> or int<W>")
    return int(v.const)


def expr_text(e: A.Expr | None) -> str:
    """Canonical source text of an expression, as p4c prints key names."""
    if e is None:
        return "_"
    if isinstance(e, A.Name):
        return ("." if e.top else "") + e.name
    if isinstance(e, A.Member):
        return f"{expr_text(e.obj)}.{e.name}"
    if isinstance(e, A.Index):
        return f"{expr_text(e.obj)}[{expr_text(e.index)}]"
    if isinstance(e, A.Slice):
        return f"{expr_text(e.obj)}[{expr_text(e.hi)}:{expr_text(e.lo)}]"
    if isinstance(e, A.IntLit):
        return e.text
    if isinstance(e, A.BoolLit):
        return "true" if e.value else "false"
    if isinstance(e, A.Call):
        return f"{expr_text(e.func)}({', '.join(expr_text(a.value) for a in e.args)})"
    if isinstance(e, A.Binary):
        return f"{expr_text(e.left)} {e.op} {expr_text(e.right)}"
    if isinstance(e, A.Unary):
        return f"{e.op}{expr_text(e.operand)}"
    if isinstance(e, A.TypeNameExpr):
        return e.name
    if isinstance(e, A.Cast):
        return f"({type_text(e.type)}){expr_text(e.expr)}"
    if isinstance(e, A.StrLit):
        return repr(e.value)
    return type(e).__name__


def type_text(t: A.TypeRef) -> str:
    if isinstance(t, A.BitsType):
        return f"{t.kind}<{expr_text(t.width)}>" if t.width is not None else t.kind
    if isinstance(t, A.NamedType):
        return t.name
    return type(t).__name__


__all__ = ["ExpressionCompiler", "V", "expr_text", "lit", "to_type_const", "ExternT", "VarbitT"]
