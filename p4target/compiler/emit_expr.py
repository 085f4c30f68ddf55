"""The general generator of expressions: Python code for a typed expression
(``ir.Expr``, made by typecheck_expr.py), as a ``V``.

It only writes code: every name, type and width was resolved and checked before.
Results wrap at their type's width, and masking is emitted only where a result can
leave its range. A result whose operands are all constants is folded to its value
(the same code, evaluated now), so that the fast path's places that are constants
fold as literals do. The places of the packet state (names, fields, stack elements)
are written by overridable methods; ``FastPlaceCode`` (fast_place_code.py)
writes them as the fast path's locals.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from p4target.compiler import ir, support
from p4target.compiler.naming import pyfield
from p4target.compiler.scope import Sym
from p4target.compiler.types import (
    BitT, BoolT, EnumT, ErrorT, IntT, ObjT, StackT, StructT, TupleT, Type, VarbitT, bit_width,
)
from p4target.compiler.values import V, lit

if TYPE_CHECKING:
    from p4target.compiler.context import CompilerContext

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


def as_unsigned(value: int, t: Type) -> int:
    """A constant of type ``t`` as its bit pattern (a negative int<W> becomes positive)."""
    return value & t.mask if isinstance(t, BitT) and t.signed else value


def folded(code: str, t: Type, all_const: bool) -> V:
    """``code`` of type ``t``; evaluated now when its operands are all constants."""
    if all_const:
        val = eval(code, _EVAL_GLOBALS)  # code built from literals only
        return V(repr(val), t, val)
    return V(code, t)


def fresh_value(t: Type) -> str | None:
    """Code for a fresh value of ``t`` (0, False, an invalid header, a zeroed struct),
    or None when a variable of ``t`` has none."""
    if isinstance(t, (BitT, IntT, ErrorT, VarbitT)):
        return "0"
    if isinstance(t, BoolT):
        return "False"
    if isinstance(t, EnumT):
        return repr(min(t.members.values())) if t.underlying is None else "0"
    if isinstance(t, StructT):
        return f"{t.pyname}()"
    if isinstance(t, StackT):
        return f"Stack({t.elem.pyname}, {t.size})"
    if isinstance(t, TupleT):
        elems = [fresh_value(et) for et in t.elems]
        return None if None in elems else "(" + "".join(f"{e}, " for e in elems) + ")"
    return None


class ExprEmitter:
    """Python code for the typed expressions of the program compiler ``ctx``, and the
    statements an expression needs before its value (a call's, a temporary's, an if
    block's), written once per node (``written``). ``places`` writes the places (the
    general path's ``PlaceCode``, or the fast path's)."""

    def __init__(self, ctx: CompilerContext, places: PlaceWriter | None = None) -> None:
        self.ctx = ctx
        self.places: PlaceWriter = places if places is not None else PlaceCode(ctx)
        self.written: dict[int, tuple[ir.Expr, V]] = {}  # the nodes whose code has effects, by id, with their value
        self._by_kind: dict[type, Callable[[Any], V]] = {  # each method takes its own node class
            ir.Const: self.const, ir.TypeName: self.type_name, ir.Ref: self.places.name, ir.Field: self.field,
            ir.StackMember: self.stack_member, ir.TableResultMember: self.table_result_member,
            ir.MethodRef: self.method_ref, ir.TupleIndex: self.tuple_index,
            ir.StackIndex: self.stack_index, ir.Slice: self.slice, ir.Unary: self.unary,
            ir.Binary: self.binary, ir.CompositeEq: self.composite, ir.Ternary: self.ternary,
            ir.Cast: self.cast, ir.Convert: self.convert_node, ir.ListValue: self.tuple_value,
            ir.TupleBuild: self.tuple_value, ir.StructBuild: self.struct_build,
            ir.CallResult: self.call_result, ir.Spill: self.spill,
            ir.ShortCircuit: self.short_circuit, ir.Conditional: self.conditional,
        }

    def emit(self, node: ir.Expr) -> V:
        v = self._by_kind[type(node)](node)
        if v.const is not None and not isinstance(v.const, str) and v.code != repr(v.const):
            v = V(repr(v.const), v.type, v.const, v.sym, v.path)
        return v

    # ------------------------------------------------------------------ leaves, places
    @staticmethod
    def const(node: ir.Const) -> V:
        return V(repr(node.const), node.type, node.const)

    @staticmethod
    def type_name(node: ir.TypeName) -> V:
        return V("", node.type, None, node.sym)

    def field(self, node: ir.Field) -> V:
        return self.places.field(node, self.emit(node.base))

    def stack_member(self, node: ir.StackMember) -> V:
        return self.places.stack_member(node, self.emit(node.base))

    def table_result_member(self, node: ir.TableResultMember) -> V:
        base = self.emit(node.base)
        hit, action = self.places.table_result(base.code)
        if node.name == "hit":
            return V(hit, BoolT())
        if node.name == "miss":
            return V(f"(not {hit})", BoolT())
        return V(action, ObjT("action_run", ""), None,
                 Sym("action_run", None, action, obj=base.sym.obj))  # type: ignore[union-attr]  # a table result has its symbol

    def method_ref(self, node: ir.MethodRef) -> V:
        base = self.emit(node.base)
        return V(base.code, node.type, None, Sym("method", None, base.code, obj=(base, node.name)))

    def tuple_index(self, node: ir.TupleIndex) -> V:
        return V(f"{self.emit(node.base).code}[{node.index}]", node.type)

    def stack_index(self, node: ir.StackIndex) -> V:
        base = self.emit(node.base)
        return self.places.stack_element(node, base, self.emit(node.index))

    def once(self, node: ir.Expr, write: Callable[[], V]) -> V:
        """The value of ``node``, whose code has effects: written (``write``) the first
        time the node is."""
        done = self.written.get(id(node))
        if done is None:
            done = self.written[id(node)] = (node, write())
        return done[1]

    def call_result(self, node: ir.CallResult) -> V:
        """The call's value: the call is written the first time its node is."""
        return self.once(node, lambda: self.ctx.call_value(node.node, node.call))

    def spill(self, node: ir.Spill) -> V:
        return self.once(node, lambda: self.write_spill(node))

    def write_spill(self, node: ir.Spill) -> V:
        if node.value is None:
            code = fresh_value(node.type)
            assert code is not None  # the checker refused the types without a fresh value
            v = V(code, node.type)
        else:
            v = self.emit(node.value)
        if node.how == "value" and v.const is not None:
            return V(v.code, node.type, v.const)
        if node.how in ("item", "arg") and v.code.lstrip("-").isdigit():
            return V(v.code, node.type)
        t = self.ctx.tmp("v")
        copy = node.how != "item" and isinstance(node.type, (StructT, StackT))
        self.ctx.emit(f"{t} = {v.code}.copy()" if copy else f"{t} = {v.code}")
        return V(t, node.type)

    def short_circuit(self, node: ir.ShortCircuit) -> V:
        return self.once(node, lambda: self.write_short_circuit(node))

    def write_short_circuit(self, node: ir.ShortCircuit) -> V:
        code = self.emit(node.left).code
        t = self.ctx.tmp("b")
        self.ctx.emit(f"{t} = {code}")
        self.ctx.emit(f"if {t}:" if node.op == "&&" else f"if not {t}:")
        self.ctx.indent()
        self.ctx.emit(f"{t} = {self.emit(node.right).code}")
        self.ctx.dedent()
        return V(t, BoolT())

    def conditional(self, node: ir.Conditional) -> V:
        return self.once(node, lambda: self.write_conditional(node))

    def write_conditional(self, node: ir.Conditional) -> V:
        code = self.emit(node.cond).code
        t = self.ctx.tmp("c")
        self.ctx.emit(f"if {code}:")
        self.ctx.indent()
        self.ctx.emit(f"{t} = {self.emit(node.then).code}")
        self.ctx.dedent()
        self.ctx.emit("else:")
        self.ctx.indent()
        self.ctx.emit(f"{t} = {self.emit(node.other).code}")
        self.ctx.dedent()
        return V(t, node.type)

    # ------------------------------------------------------------------ operators
    def slice(self, node: ir.Slice) -> V:
        base = self.emit(node.base)
        bt, hi, lo = node.base.type, node.hi, node.lo
        width = bit_width(bt) if isinstance(bt, BitT) else hi + 1
        mask = (1 << (hi - lo + 1)) - 1
        code = f"(({base.code} >> {lo}) & {mask:#x})" if lo else f"({base.code} & {mask:#x})"
        if isinstance(bt, BitT) and not bt.signed and hi == width - 1:
            # the top bits: nothing above them to mask off (a value fits its type)
            code = f"({base.code} >> {lo})" if lo else base.code
        if isinstance(bt, BitT) and bt.signed:
            code = f"(({base.code} & {(1 << width) - 1:#x}) >> {lo} & {mask:#x})"
        return folded(code, node.type, base.const is not None)

    def unary(self, node: ir.Unary) -> V:
        v = self.emit(node.operand)
        t, c = node.type, v.const is not None
        if node.op == "!":
            return folded(f"(not {v.code})", t, c)
        if node.op == "~":
            assert isinstance(t, BitT)
            if t.signed:
                return folded(f"(~{v.code})", t, c)
            return folded(f"({v.code} ^ {t.mask:#x})", t, c)
        if isinstance(t, IntT):
            return folded(f"(-{v.code})", t, c)
        assert isinstance(t, BitT)
        if t.signed:
            return folded(wrap_signed(f"-{v.code}", t.width), t, c)
        return folded(f"(-{v.code} & {t.mask:#x})", t, c)

    def binary(self, node: ir.Binary) -> V:
        left = self.emit(node.left)
        r = self.emit(node.right)
        op, c = node.op, left.const is not None and r.const is not None
        if op in ("&&", "||"):
            return folded(f"({left.code} {'and' if op == '&&' else 'or'} {r.code})", BoolT(), c)
        if op in ("==", "!=", "<", ">", "<=", ">="):
            return folded(f"({left.code} {op} {r.code})", BoolT(), c)
        if op in ("<<", ">>"):
            return self.shift(node, left, r, c)
        if op == "++":
            return self.concat(node, left, r, c)
        return self.arith(node, left, r, c)

    @staticmethod
    def concat(node: ir.Binary, left: V, r: V, c: bool) -> V:
        lt, rt = node.left.type, node.right.type
        assert isinstance(lt, BitT) and isinstance(rt, BitT)
        rcode = r.code if not rt.signed else f"({r.code} & {rt.mask:#x})"
        lcode = left.code if not lt.signed else f"({left.code} & {lt.mask:#x})"
        t = BitT(lt.width + rt.width, lt.signed)
        code = f"(({lcode} << {rt.width}) | {rcode})"
        if r.const == 0 and not rt.signed:  # x ++ 16w0: nothing to or in
            code = f"({lcode} << {rt.width})"
        if t.signed:
            code = f"(({code} ^ {1 << (t.width - 1)}) - {1 << (t.width - 1)})"
        return folded(code, t, c)

    @staticmethod
    def arith(node: ir.Binary, left: V, r: V, c: bool) -> V:
        """``+ - * / % & | ^ |+| |-|``."""
        op, t, lc, rc = node.op, node.type, left.code, r.code
        if isinstance(t, IntT):
            pyop = {"/": "//", "|+|": "+", "|-|": "-"}.get(op, op)
            return folded(f"({lc} {pyop} {rc})", t, c)
        assert isinstance(t, BitT)
        if op in ("&", "|", "^"):
            return folded(f"({lc} {op} {rc})", t, c)
        if op in ("/", "%"):
            return folded(f"{'div' if op == '/' else 'mod'}({lc}, {rc})", t, c)
        if op in ("|+|", "|-|"):
            return ExprEmitter.saturating(op, lc, rc, t, c)
        raw = f"{lc} {op} {rc}"
        if t.signed:
            return folded(wrap_signed(raw, t.width), t, c)
        return folded(f"(({raw}) & {t.mask:#x})", t, c)

    @staticmethod
    def saturating(op: str, lc: str, rc: str, t: BitT, c: bool) -> V:
        pyop = "+" if op == "|+|" else "-"
        if t.signed:
            h = 1 << (t.width - 1)
            return folded(f"max(min({lc} {pyop} {rc}, {h - 1}), {-h})", t, c)
        if op == "|+|":
            return folded(f"min({lc} + {rc}, {t.mask:#x})", t, c)
        return folded(f"max({lc} - {rc}, 0)", t, c)

    @staticmethod
    def shift(node: ir.Binary, left: V, r: V, c: bool) -> V:
        lt = node.type
        if isinstance(lt, IntT):
            return folded(f"({left.code} {node.op} {r.code})", lt, True)
        assert isinstance(lt, BitT)
        if node.op == ">>":
            return folded(f"({left.code} >> {r.code})", lt, c)
        if r.const is not None:
            amount = int(r.const)
            if amount >= lt.width:
                return folded("0", lt, True) if not lt.signed else lit(0, lt)
            if lt.signed:
                return folded(wrap_signed(f"{left.code} << {amount}", lt.width), lt, c)
            return folded(f"(({left.code} << {amount}) & {lt.mask:#x})", lt, c)
        if lt.signed:
            return V(wrap_signed(f"shl({left.code} & {lt.mask:#x}, {r.code}, {lt.width})", lt.width), lt)
        return V(f"shl({left.code}, {r.code}, {lt.width})", lt)

    def composite(self, node: ir.CompositeEq) -> V:
        eq = self.places.composite_eq(self.emit(node.left).code, self.emit(node.right).code, node.operand_type)
        return V(f"({eq})" if node.op == "==" else f"(not ({eq}))", BoolT())

    def ternary(self, node: ir.Ternary) -> V:
        cond = self.emit(node.cond)
        a = self.emit(node.then)
        b = self.emit(node.other)
        return folded(f"({a.code} if {cond.code} else {b.code})", node.type,
                      cond.const is not None and a.const is not None and b.const is not None)

    # ------------------------------------------------------------------ conversions
    def cast(self, node: ir.Cast) -> V:
        return self.cast_value(self.emit(node.operand), node.type)

    def cast_value(self, v: V, t: Type) -> V:
        """``(t) v`` (checked to convert by the type checker)."""
        vt, c = v.type, v.const is not None
        if isinstance(t, BitT):
            done = self.cast_to_bits(v, t)
            if done is not None:
                return done
        if isinstance(t, BoolT):
            if isinstance(vt, BoolT):
                return v
            if isinstance(vt, BitT):
                return folded(f"({v.code} == 1)", t, c)
            return lit(bool(v.const), t)
        if isinstance(t, IntT):
            return V(v.code, t, v.const)
        if isinstance(t, EnumT) and t.underlying is not None and isinstance(vt, (BitT, IntT)):
            inner = self.cast_value(v, t.underlying) if isinstance(vt, IntT) or vt != t.underlying else v
            return V(inner.code, t, inner.const)
        return v

    def cast_to_bits(self, v: V, t: BitT) -> V | None:
        """``(bit<W>) v`` / ``(int<W>) v``, or None when ``v``'s type does not convert so."""
        vt = v.type
        c = v.const is not None
        if isinstance(vt, IntT) and not c:  # (bit<W>)((int)x + 1): wraps to the width
            h = 1 << (t.width - 1)
            return V(f"((({v.code}) & {t.mask:#x} ^ {h}) - {h})" if t.signed else f"(({v.code}) & {t.mask:#x})", t)
        if isinstance(vt, IntT):
            return lit(to_type_const(int(v.const), t), t)  # type: ignore[arg-type]  # an int constant: const is an int
        if isinstance(vt, BoolT):
            return folded(f"int({v.code})", t, c)
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
        return folded(code, t, c)

    def convert_node(self, node: ir.Convert) -> V:
        return V(self.convert(self.emit(node.operand), node.type, node.how), node.type)

    def convert(self, v: V, t: Type, how: str) -> str:
        """Code for ``v`` converted implicitly to ``t`` as the type checker decided (``how``)."""
        return self.places.convert(v, t, how)

    def tuple_value(self, node: ir.ListValue | ir.TupleBuild) -> V:
        return V("(" + "".join(self.emit(i).code + ", " for i in node.items) + ")", node.type)

    def struct_build(self, node: ir.StructBuild) -> V:
        return V(f"mk_{node.struct.pyname}(" + ", ".join(self.emit(f).code for f in node.fields) + ")",
                 node.type)

    # ------------------------------------------------------------------ bit strings
    def flatten_bits(self, node: ir.Bits) -> tuple[str, int | str, list[tuple[str, int | str]]]:
        """A bit string as ``(code, width, parts)``: fields concatenated MSB first. A
        varbit field contributes its current bits: its part's width, and then the
        total width, is code (the header's ``_len_`` attribute) rather than a number."""
        parts: list[tuple[str, int | str]] = []
        for part, holder in zip(node.parts, node.varbit_of, strict=True):
            v = self.emit(part)
            if holder is not None and isinstance(part, ir.Field):
                parts.append((v.code, f"{self.emit(holder).code}._len_{part.name}"))
            else:
                n = len(parts)
                self.flatten_value(v, parts)
                self.places.bits_part(v, parts[n:])
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

    def flatten_value(self, v: V, parts: list[tuple[str, int | str]]) -> None:
        t = v.type
        if isinstance(t, StructT):
            for n, ft in t.fields:
                if isinstance(ft, VarbitT):  # its current bits
                    parts.append((f"{v.code}.{pyfield(n)}", f"{v.code}._len_{n}"))
                    continue
                self.flatten_value(V(f"{v.code}.{pyfield(n)}", ft), parts)
        elif isinstance(t, TupleT):
            for i, et in enumerate(t.elems):
                self.flatten_value(V(f"{v.code}[{i}]", et), parts)
        elif isinstance(t, BitT):
            parts.append((v.code if not t.signed else f"({v.code} & {t.mask:#x})", t.width))
        elif isinstance(t, BoolT):
            parts.append((f"int({v.code})", 1))
        else:  # a serializable enum (the type checker allows no other leaf)
            assert isinstance(t, EnumT) and t.underlying is not None
            parts.append((v.code, t.underlying.width))


class PlaceWriter(Protocol):
    """How the places of an expression (names, fields, stack members and elements, a
    table's result), the implicit copy of a header or struct and the comparison of
    two are written: ``PlaceCode`` for the general path, ``FastPlaceCode``
    (fast_place_code.py) for the fast path's locals."""

    def name(self, node: ir.Ref) -> V: ...
    def field(self, node: ir.Field, base: V) -> V: ...
    def stack_member(self, node: ir.StackMember, base: V) -> V: ...
    def stack_element(self, node: ir.StackIndex, base: V, idx: V) -> V: ...
    def table_result(self, code: str) -> tuple[str, str]: ...
    def convert(self, v: V, t: Type, how: str) -> str: ...
    def composite_eq(self, a: str, b: str, t: StructT | StackT) -> str: ...
    def bits_part(self, v: V, parts: list[tuple[str, int | str]]) -> None: ...


class PlaceCode:
    """The general path's places: a name is its symbol's code, a field an attribute of
    its header or struct object, a stack element one of the stack's ``h``."""

    def __init__(self, ctx: CompilerContext) -> None:
        self.ctx = ctx

    @staticmethod
    def name(node: ir.Ref) -> V:
        return V(node.sym.code, node.type, None, node.sym)

    @staticmethod
    def field(node: ir.Field, base: V) -> V:
        return V(f"{base.code}.{pyfield(node.name)}", node.type)

    def stack_member(self, node: ir.StackMember, base_v: V) -> V:
        base = base_v.code
        if node.name == "lastIndex":
            return V(f"(({base}.nxt - 1) & 0xffffffff)", node.type)
        if node.name == "nextIndex":
            return V(f"{base}.nxt", node.type)
        if node.name == "last":
            if node.in_parser:
                code = self.ctx.errors_by_name["StackOutOfBounds"]
                return V(f"{base}.last_in_parser(pos, {code})", node.type)
            return V(f"{base}.at({base}.nxt - 1)", node.type)
        return V(f"{base}.at({base}.nxt)", node.type)  # next

    @staticmethod
    def table_result(code: str) -> tuple[str, str]:
        """The code of the hit flag and of the action of the table result ``code``."""
        return f"{code}[1]", f"{code}[0]"

    @staticmethod
    def stack_element(node: ir.StackIndex, base: V, idx: V) -> V:
        if node.at is not None:
            return V(f"{base.code}.h[{node.at}]", node.type)
        return V(f"{base.code}.at({idx.code})", node.type)

    @staticmethod
    def convert(v: V, t: Type, how: str) -> str:
        """Code for ``v`` converted implicitly to ``t`` as the type checker decided (``how``)."""
        if how == "copy":
            return f"{v.code}.copy()"
        if how == "tuple_copy":
            return f"tuple(_x.copy() if hasattr(_x, 'copy') else _x for _x in {v.code})"  # a value: its own headers
        return v.code

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

    @staticmethod
    def bits_part(v: V, parts: list[tuple[str, int | str]]) -> None:
        """Told the ``parts`` of a bit string that value ``v`` became (nothing to note here)."""
