"""The type checker of expressions: a P4 expression of the syntax tree becomes a typed
expression (``ir.Expr``), every name resolved, every type and width rule checked,
unsized literals given the type of the other operand and constants folded. Every
error of an expression is raised here, at its place; the generators (emit_expr.py
and the fast path's) then only write code.

Width rules follow the P4_16 spec: operands of a binary operator must have the same
type (an unsized literal adopts the other side's type), results wrap at the type's
width. Evaluation order (P4_16 8.1): operands left to right, ``&&``/``||``
short-circuit, ``?:`` evaluates one branch. The checker writes no code: a call is
checked by the call checker (``ctx.check_call``) into a ``CallResult`` node, which
the generator writes where it writes the expression; where a later operand has
side effects, the operands before it are ``Spill`` nodes (written into temporaries
first), and ``&&``, ``||`` and ``?:`` whose later operands have effects are
``ShortCircuit`` and ``Conditional`` nodes (written as if blocks).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from p4target.compiler import ir
from p4target.compiler.emit_expr import ExprEmitter, to_type_const
from p4target.compiler.scope import Sym
from p4target.compiler.source_text import expr_text
from p4target.compiler.typecheck_keys import BitsChecker, KeysetChecker
from p4target.compiler.types import (
    BitT, BoolT, EnumT, ErrorT, IntT, ObjT, StackT, StringT, StructT, TupleT, Type, VarbitT,
    VoidT, bit_width,
)
from p4target.frontend import ast as A
from p4target.frontend.source import Loc, error, unsupported

if TYPE_CHECKING:
    from p4target.compiler.context import CompilerContext

MAX_WIDTH = 2048  # the widest integer p4c computes with
_CALLABLE = ("table", "instance", "packet_in", "packet_out")
_ARITH = ("+", "-", "*", "/", "%", "&", "|", "^", "|+|", "|-|")


def kind_of(node: ir.Expr) -> str | None:
    """The kind of the symbol ``node`` names (``var``, ``table``, ``type``...), or None
    for a value that names none."""
    kind = type(node)
    if kind is ir.Field or kind is ir.Const:  # most nodes: found first
        return None
    if isinstance(node, (ir.Ref, ir.TypeName)):
        return node.sym.kind
    if isinstance(node, ir.MethodRef):
        return "method"
    if isinstance(node, ir.TableResultMember) and node.name == "action_run":
        return "action_run"
    if isinstance(node, ir.CallResult) and isinstance(node.node, ir.TableApply):
        return "tableresult"
    return None


def known_int(const: object, loc: Loc) -> int:
    """The value of an unsized integer; one computed at run time (``(int)x``) has no
    width to take here."""
    if const is None:
        raise error(loc, "an unsized integer computed at run time has no width here; cast it to bit<W> or int<W>")
    return int(const)  # type: ignore[call-overload]  # an unsized integer's value is an int


class ExprChecker:
    """The expressions of the program compiler ``ctx``, typed and checked. ``emitter``
    (the fast path's, in the fast compiler) computes the value of a node whose
    operands are constants; it writes nothing for the checker.
    ``entered`` counts the expressions checked and ``depth`` those being checked
    (``evaluated_before`` compares them, to know whether anything was evaluated
    before a table applied inside an expression; the fast path's statements set
    ``base``)."""

    def __init__(self, ctx: CompilerContext, emitter: ExprEmitter) -> None:
        self.ctx = ctx
        self.emitter = emitter
        self.entered = 0
        self.depth = 0
        self.base = 0  # ``depth`` where the current statement starts (the fast path's)
        self.keysets = KeysetChecker(self)  # a select case's or table entry's keysets
        self.bits = BitsChecker(self)  # hash, checksum and digest data
        self._by_kind: dict[type, Callable[[Any], ir.Expr]] = {  # each method takes its own node class
            A.IntLit: self.int_lit, A.BoolLit: self.bool_lit, A.StrLit: self.str_lit,
            A.TypeNameExpr: self.type_name_expr, A.Name: self.name, A.Member: self.member,
            A.Index: self.index, A.Slice: self.slice, A.Unary: self.unary, A.Binary: self.binary,
            A.Ternary: self.ternary, A.Cast: self.cast_expr, A.ListExpr: self.list_expr,
            A.StructExpr: self.struct_expr, A.DefaultExpr: self.default_expr, A.Mask: self.mask,
            A.Range: self.range, A.Call: self.call,
        }

    def evaluated_before(self) -> bool:
        """Whether the statement being checked evaluated an expression that has been
        done with (not one of those being checked) until now."""
        return self.entered != self.depth - self.base

    # ------------------------------------------------------------------ entry points
    def check(self, e: A.Expr) -> ir.Expr:
        self.entered += 1
        self.depth += 1
        try:
            method = self._by_kind[type(e)]
        except KeyError:
            raise unsupported(e.loc, f"expression {type(e).__name__}", "rewrite it") from None
        node = method(e)  # an error abandons the expression's statement: no finally
        self.depth -= 1
        return node

    def check_value(self, e: A.Expr) -> ir.Expr:
        """An expression that must be a value (not a table, extern, type...)."""
        node = self.check(e)
        if type(node) is ir.Field or type(node) is ir.Const:  # most values: no symbol
            return node
        kind = kind_of(node)
        if kind is not None and kind not in ("var", "const"):
            raise error(e.loc, f"'{expr_text(e)}' is a {kind}, not a value")
        return node

    def const_int(self, e: A.Expr, what: str = "value") -> int:
        node = self.check_value(e)
        if node.const is None or isinstance(node.const, (str, bool)):
            raise error(e.loc, f"{what} must be a compile-time integer constant; "
                        f"'{expr_text(e)}' is not")
        return int(node.const)

    def check_as(self, e: A.Expr, t: Type, what: str = "value") -> ir.Expr:
        """``e`` converted implicitly to ``t`` (assignment, argument passing)."""
        if isinstance(e, (A.ListExpr, A.StructExpr)) and isinstance(t, StructT):
            return self.build_struct(e, t)
        if isinstance(e, A.ListExpr) and isinstance(t, TupleT):
            if len(e.items) != len(t.elems):
                raise error(e.loc, f"{what}: expected {len(t.elems)} elements, got {len(e.items)}")
            items = self.in_order([(i, et, what) for i, et in zip(e.items, t.elems, strict=False)])
            return ir.TupleBuild(type=t, loc=e.loc, items=tuple(items))
        return self.convert(self.check_value(e), t, e.loc, what)

    def convert(self, node: ir.Expr, t: Type, loc: Loc, what: str = "value") -> ir.Expr:
        how = self.conversion(node.type, node.const, t, loc, what)
        if isinstance(how, int):
            return ir.Const(type=t, loc=loc, const=how)
        return node if how == "same" else ir.Convert(type=t, loc=loc, operand=node, how=how)

    @staticmethod
    def conversion(vt: Type, const: object, t: Type, loc: Loc, what: str = "value") -> str | int:
        """How a value of type ``vt`` (value ``const`` when known) converts implicitly
        to ``t``: ``same``, ``copy``, ``tuple_copy`` (ir.Convert), or the constant it becomes."""
        if isinstance(t, (BitT, EnumT)) and isinstance(vt, IntT):
            if isinstance(t, EnumT):
                raise error(loc, f"{what}: cannot use an integer as {t}; use {t.name}.<member>")
            return to_type_const(known_int(const, loc), t)
        if isinstance(t, BitT) and isinstance(vt, EnumT) and vt.underlying == t:
            return "same"  # a serializable enum converts to its underlying type (P4_16 8.3)
        if isinstance(t, BitT) and isinstance(vt, BitT):
            if t == vt:
                return "same"
            raise error(loc, f"{what}: cannot convert {vt} to {t} implicitly; add a cast ({t})")
        if isinstance(t, IntT) and isinstance(vt, (IntT, BitT)) or isinstance(t, BoolT) and isinstance(vt, BoolT):
            return "same"
        if isinstance(t, StructT) and isinstance(vt, StructT) and t is vt:
            return "copy"
        if isinstance(t, StackT) and isinstance(vt, StackT) and vt.elem is t.elem and vt.size == t.size:
            return "copy"
        if isinstance(t, TupleT) and t == vt and any(isinstance(et, (StructT, StackT)) for et in t.elems):
            return "tuple_copy"
        if type(t) is type(vt) and isinstance(t, (ErrorT, StringT, VarbitT, TupleT)) and t == vt \
                or isinstance(t, EnumT) and vt is t:
            return "same"
        raise error(loc, f"{what}: type mismatch, expected {t} but got {vt}")

    # ------------------------------------------------------------------ literals, names
    @staticmethod
    def int_lit(e: A.IntLit) -> ir.Expr:
        if e.width is None:
            return ir.Const(type=IntT(), loc=e.loc, const=e.value)
        t = BitT(e.width, e.signed)
        return ir.Const(type=t, loc=e.loc, const=to_type_const(e.value, t))

    @staticmethod
    def bool_lit(e: A.BoolLit) -> ir.Expr:
        return ir.Const(type=BoolT(), loc=e.loc, const=e.value)

    @staticmethod
    def str_lit(e: A.StrLit) -> ir.Expr:
        return ir.Const(type=StringT(), loc=e.loc, const=e.value)

    @staticmethod
    def type_name_expr(e: A.TypeNameExpr) -> ir.Expr:
        return ir.TypeName(type=ErrorT(), loc=e.loc, sym=Sym("type", ErrorT()))

    def name(self, e: A.Name) -> ir.Expr:
        sym = self.ctx.global_scope.lookup(e.name) if e.top else self.ctx.scope.lookup(e.name)
        if sym is None:
            t = self.ctx.type_names.get(e.name)
            if t is not None:
                return ir.TypeName(type=t, loc=e.loc, sym=Sym("type", t))
            raise error(e.loc, f"unknown name '{e.name}'; declare it before use")
        if sym.kind == "const":
            return ir.Const(type=sym.type, loc=e.loc, const=sym.const)  # type: ignore[arg-type]  # a const symbol has a type and a value
        if sym.kind == "spilled":  # a value the statement checker keeps in a temporary
            return sym.obj  # its ir.Spill
        if sym.kind == "var":
            self.ctx.note_use(sym)
        return ir.Ref(type=sym.type or ObjT(sym.kind, e.name), loc=e.loc, sym=sym)

    def member(self, e: A.Member) -> ir.Expr:
        base = self.check(e.obj)
        bt = base.type
        kind = kind_of(base)
        if kind == "type":
            return self.type_member(e, bt)
        if isinstance(bt, StructT):
            ft = bt.field_type(e.name)
            if ft is None:
                raise error(e.loc, f"{bt} has no field '{e.name}'; the fields are "
                            + ", ".join(n for n, _ in bt.fields))
            return ir.Field(type=ft, loc=e.loc, base=base, name=e.name, parent=bt)
        if isinstance(bt, StackT):
            return self.stack_member(e, base, bt)
        if kind == "tableresult":
            return self.table_result_member(e, base)
        if kind in _CALLABLE:
            return ir.MethodRef(type=ObjT("method", e.name), loc=e.loc, base=base, name=e.name)
        raise error(e.loc, f"'{expr_text(e.obj)}' of type {bt} has no member '{e.name}'")

    def type_member(self, e: A.Member, bt: Type) -> ir.Expr:
        """``error.X`` or ``Enum.X``."""
        if isinstance(bt, ErrorT):
            code = self.ctx.errors_by_name.get(e.name)
            if code is None:
                raise error(e.loc, f"unknown error 'error.{e.name}'; declare it in an error {{}} block")
            return ir.Const(type=ErrorT(), loc=e.loc, const=code)
        if isinstance(bt, EnumT):
            if e.name not in bt.members:
                raise error(e.loc, f"enum {bt.name} has no member '{e.name}'")
            return ir.Const(type=bt, loc=e.loc, const=bt.members[e.name])
        raise error(e.loc, f"type {bt} has no member '{e.name}'")

    def stack_member(self, e: A.Member, base: ir.Expr, bt: StackT) -> ir.Expr:
        """``s.size``, ``s.next``, ``s.last``, ``s.lastIndex``, ``s.nextIndex``."""
        if e.name == "size":
            return ir.Const(type=BitT(32), loc=e.loc, const=bt.size)
        in_parser = self.ctx.fn_kind == "parser"
        if e.name in ("next", "last", "lastIndex") and not in_parser:
            raise error(e.loc, f"'{e.name}' of a header stack can only be used in a parser "
                        "(as in p4c); use an index or keep the value in metadata")
        if e.name in ("lastIndex", "nextIndex"):
            return ir.StackMember(type=BitT(32), loc=e.loc, base=base, name=e.name, stack=bt, in_parser=in_parser)
        if e.name in ("last", "next"):
            return ir.StackMember(type=bt.elem, loc=e.loc, base=base, name=e.name, stack=bt, in_parser=in_parser)
        raise error(e.loc, f"header stack has no member '{e.name}'; use size, next, last, "
                    "lastIndex, nextIndex, push_front, pop_front or [i]")

    @staticmethod
    def table_result_member(e: A.Member, base: ir.Expr) -> ir.Expr:
        """``t.apply().hit``, ``.miss``, ``.action_run``."""
        if e.name in ("hit", "miss"):
            return ir.TableResultMember(type=BoolT(), loc=e.loc, base=base, name=e.name)
        if e.name == "action_run":
            return ir.TableResultMember(type=ObjT("action_run", ""), loc=e.loc, base=base, name=e.name)
        raise error(e.loc, f"a table apply result has no member '{e.name}'; use hit, miss "
                    "or action_run")

    def index(self, e: A.Index) -> ir.Expr:
        base = self.check_value(e.obj)
        bt = base.type
        if isinstance(bt, TupleT):
            i = self.const_int(e.index, "tuple index")
            if not 0 <= i < len(bt.elems):
                raise error(e.loc, f"index {i} is out of range for {bt}")
            return ir.TupleIndex(type=bt.elems[i], loc=e.loc, base=base, index=i)
        if not isinstance(bt, StackT):
            raise error(e.loc, f"'{expr_text(e.obj)}' is not a header stack or tuple; only those can be indexed")
        idx = self.check_value(e.index)
        it = idx.type
        if isinstance(it, EnumT) and it.underlying is not None:  # a serializable enum: its value
            it = it.underlying
        if idx.const is not None:
            i = int(idx.const)
            if not 0 <= i < bt.size:
                raise error(e.loc, f"index {i} is out of range for a stack of size {bt.size}")
            return ir.StackIndex(type=bt.elem, loc=e.loc, base=base, index=idx, at=i, stack=bt)
        if not isinstance(it, BitT):
            raise error(e.index.loc, f"stack index must be bit<W> or int, not {it}")
        return ir.StackIndex(type=bt.elem, loc=e.loc, base=base, index=idx, at=None, stack=bt)

    def slice(self, e: A.Slice) -> ir.Expr:
        base = self.check_value(e.obj)
        bt = base.type
        if not (isinstance(bt, IntT) and base.const is not None) and not isinstance(bt, BitT):
            raise error(e.loc, f"cannot slice a value of type {bt}; slices need bit<W> or int<W>")
        hi = self.const_int(e.hi, "slice bound")
        lo = self.const_int(e.lo, "slice bound")
        width = bit_width(bt) if isinstance(bt, BitT) else hi + 1
        if not (0 <= lo <= hi < width):
            raise error(e.loc, f"slice [{hi}:{lo}] is out of range for {bt}; "
                        f"bounds must satisfy {width - 1} >= hi >= lo >= 0")
        return self.folded(ir.Slice(type=BitT(hi - lo + 1), loc=e.loc, base=base, hi=hi, lo=lo), base)

    def folded(self, node: ir.Expr, *operands: ir.Expr) -> ir.Expr:
        """``node``, or the constant it is when its ``operands`` are all constants
        (computed by the code the generator writes for it)."""
        if any(x.const is None for x in operands):
            return node
        v = self.emitter.emit(node)
        if v.const is None:
            return node
        return ir.Const(type=node.type, loc=node.loc, const=v.const)

    # ------------------------------------------------------------------ operators
    def unary(self, e: A.Unary) -> ir.Expr:
        v = self.check_value(e.operand)
        t = v.type
        if e.op == "!":
            if not isinstance(t, BoolT):
                raise error(e.loc, f"'!' needs a bool operand, not {t}; compare with 0 instead")
        elif e.op == "~":
            if not isinstance(t, BitT):
                raise error(e.loc, f"'~' needs a bit<W> operand, not {t}")
        elif e.op == "-":
            if not isinstance(t, (IntT, BitT)):
                raise error(e.loc, f"unary '-' needs a numeric operand, not {t}")
        else:
            raise unsupported(e.loc, f"operator '{e.op}'", "rewrite the expression")
        return self.folded(ir.Unary(type=t, loc=e.loc, op=e.op, operand=v), v)

    def unify(self, left: ir.Expr, r: ir.Expr, loc: Loc, op: str) -> tuple[ir.Expr, ir.Expr, Type]:
        """The operands of ``op`` with the same type: an unsized literal beside a sized
        operand becomes a constant of its type."""
        lt, rt = left.type, r.type
        # a serializable enum next to a bit<W> value is its underlying type (P4_16 8.3)
        if isinstance(lt, EnumT) and lt.underlying is not None and isinstance(rt, BitT):
            lt = lt.underlying
        elif isinstance(rt, EnumT) and rt.underlying is not None and isinstance(lt, BitT):
            rt = rt.underlying
        if isinstance(lt, IntT) and isinstance(rt, IntT):
            return left, r, lt
        if isinstance(lt, IntT) and isinstance(rt, BitT):
            return ir.Const(type=rt, loc=left.loc, const=to_type_const(known_int(left.const, loc), rt)), r, rt
        if isinstance(rt, IntT) and isinstance(lt, BitT):
            return left, ir.Const(type=lt, loc=r.loc, const=to_type_const(known_int(r.const, loc), lt)), lt
        if isinstance(lt, BitT) and isinstance(rt, BitT):
            if lt != rt:
                raise error(loc, f"operands of '{op}' have different types {lt} and {rt}; "
                            "cast one side so both have the same width and signedness")
            return left, r, lt
        if isinstance(lt, EnumT) and lt.underlying is not None and isinstance(rt, IntT):
            return left, ir.Const(type=rt, loc=r.loc, const=known_int(r.const, loc)), lt
        if type(lt) is type(rt) and (lt == rt or lt is rt) and op in ("==", "!="):
            return left, r, lt
        raise error(loc, f"operands of '{op}' have incompatible types {lt} and {rt}")

    @staticmethod
    def spill(node: ir.Expr) -> ir.Expr:
        """``node`` kept in a temporary before a later operand's effects (constants
        stay as they are)."""
        if node.const is not None:
            return node
        return ir.Spill(type=node.type, loc=node.loc, value=node)

    def short_circuit(self, e: A.Binary) -> ir.Expr:
        """``a && b`` / ``a || b`` whose right operand has effects: ``b`` (and its
        effects) only when ``a`` does not decide."""
        left = self.check_value(e.left)
        if not isinstance(left.type, BoolT):
            raise error(e.left.loc, f"'{e.op}' needs bool operands, not {left.type}")
        r = self.check_value(e.right)
        if not isinstance(r.type, BoolT):
            raise error(e.right.loc, f"'{e.op}' needs bool operands, not {r.type}")
        return ir.ShortCircuit(type=BoolT(), loc=e.loc, op=e.op, left=left, right=r)

    def binary(self, e: A.Binary) -> ir.Expr:
        op = e.op
        if op in ("&&", "||") and self.ctx.has_effects(e.right):
            return self.short_circuit(e)
        left = self.check_value(e.left)
        if self.ctx.has_effects(e.right):
            left = self.spill(left)
        r = self.check_value(e.right)
        if op in ("&&", "||"):
            for v, side in ((left, e.left), (r, e.right)):
                if not isinstance(v.type, BoolT):
                    raise error(side.loc, f"'{op}' needs bool operands, not {v.type}")
            return self.folded(ir.Binary(type=BoolT(), loc=e.loc, op=op, left=left, right=r,
                                         operand_type=BoolT()), left, r)
        if op in ("==", "!="):
            if isinstance(left.type, (StructT, StackT)) or isinstance(r.type, (StructT, StackT)):
                if not (left.type is r.type or left.type == r.type):
                    raise error(e.loc, f"operands of '{op}' have different types {left.type} and {r.type}")
                return ir.CompositeEq(type=BoolT(), loc=e.loc, op=op, left=left, right=r,
                                      operand_type=left.type)  # type: ignore[arg-type]  # both are the same struct or stack type (checked just above)
            return self.compare(e, left, r, numeric=False)
        if op in ("<", ">", "<=", ">="):
            return self.compare(e, left, r, numeric=True)
        if op in ("<<", ">>"):
            return self.shift(e, left, r)
        if op == "++":
            return self.concat(e, left, r)
        return self.arith(e, left, r)

    def compare(self, e: A.Binary, left: ir.Expr, r: ir.Expr, numeric: bool) -> ir.Expr:
        lc, rc, t = self.unify(left, r, e.loc, e.op)
        if numeric and not isinstance(t, (BitT, IntT)):
            raise error(e.loc, f"'{e.op}' needs numeric operands, not {t}")
        return self.folded(ir.Binary(type=BoolT(), loc=e.loc, op=e.op, left=lc, right=rc, operand_type=t), lc, rc)

    def concat(self, e: A.Binary, left: ir.Expr, r: ir.Expr) -> ir.Expr:
        """``a ++ b``."""
        lt, rt = left.type, r.type
        if not isinstance(lt, BitT) or not isinstance(rt, BitT):
            raise error(e.loc, f"'++' needs operands with a width (bit<W>/int<W>), not {lt} and {rt}; "
                        "give literals a width such as 16w0")
        t = BitT(lt.width + rt.width, lt.signed)
        return self.folded(ir.Binary(type=t, loc=e.loc, op="++", left=left, right=r, operand_type=lt), left, r)

    def arith(self, e: A.Binary, left: ir.Expr, r: ir.Expr) -> ir.Expr:
        """``+ - * / % & | ^ |+| |-|``."""
        op = e.op
        if op not in _ARITH:
            raise unsupported(e.loc, f"operator '{op}'", "rewrite the expression")
        c = left.const is not None and r.const is not None
        lc, rc, t = self.unify(left, r, e.loc, op)
        if isinstance(t, IntT):
            if not c and op not in ("+", "-", "*"):  # (int)x + 1: exact, as Python's int
                raise error(e.loc, f"'{op}' on unsized integers needs constants")
        elif not isinstance(t, BitT):
            raise error(e.loc, f"'{op}' needs bit<W> or int<W> operands, not {t}")
        elif op in ("/", "%") and t.signed:
            raise unsupported(e.loc, f"'{op}' on signed int<W>", "use bit<W> operands")
        return self.folded(ir.Binary(type=t, loc=e.loc, op=op, left=lc, right=rc, operand_type=t), lc, rc)

    def shift(self, e: A.Binary, left: ir.Expr, r: ir.Expr) -> ir.Expr:
        lt, rt = left.type, r.type
        if isinstance(rt, BitT) and rt.new_type:
            raise error(e.right.loc, f"shift amount must be bit<W> or a non-negative integer, not type "
                        f"{rt.new_type}; cast it: (bit<{rt.width}>)")
        if isinstance(rt, BitT) and rt.signed:
            raise error(e.right.loc, "shift amount must be unsigned (bit<W> or a non-negative literal)")
        if isinstance(rt, IntT) and known_int(r.const, e.right.loc) < 0:
            raise error(e.right.loc, "shift amount must not be negative")
        if not isinstance(rt, (BitT, IntT)):
            raise error(e.right.loc, f"shift amount must be an integer, not {rt}")
        node = ir.Binary(type=lt, loc=e.loc, op=e.op, left=left, right=r, operand_type=lt)
        if isinstance(lt, IntT):
            if left.const is None or r.const is None:
                raise error(e.loc, "shifting an unsized integer by a run-time amount; give it a width")
            if e.op == "<<" and int(r.const) > MAX_WIDTH:
                raise error(e.loc, f"shifting an unsized integer left by {r.const} bits; integers are at "
                            f"most {MAX_WIDTH} bits wide (as in p4c)")
            return self.folded(node, left, r)
        if not isinstance(lt, BitT):
            raise error(e.left.loc, f"cannot shift a value of type {lt}")
        if e.op == "<<" and r.const is not None and int(r.const) >= lt.width:
            return ir.Const(type=lt, loc=e.loc, const=0)  # every bit shifted out
        return self.folded(node, left, r)

    def ternary(self, e: A.Ternary) -> ir.Expr:
        cond = self.check_value(e.cond)
        if not isinstance(cond.type, BoolT):
            raise error(e.cond.loc, f"condition must be bool, not {cond.type}")
        if self.ctx.has_effects(e.then) or self.ctx.has_effects(e.other):
            if cond.const is not None:  # only the chosen branch, and its effects
                return self.check_value(e.then if cond.const else e.other)
            return self.conditional(e, cond)
        a = self.check_value(e.then)
        b = self.check_value(e.other)
        ac, bc, t = self.branches(e, a, b)
        if isinstance(t, IntT) and cond.const is None:
            raise error(e.loc, "both branches of ?: are unsized integers; give one a width")
        return self.folded(ir.Ternary(type=t, loc=e.loc, cond=cond, then=ac, other=bc), cond, ac, bc)

    def branches(self, e: A.Ternary, a: ir.Expr, b: ir.Expr) -> tuple[ir.Expr, ir.Expr, Type]:
        if isinstance(a.type, BoolT) and isinstance(b.type, BoolT):
            return a, b, a.type
        return self.unify(a, b, e.loc, "?:")

    def conditional(self, e: A.Ternary, cond: ir.Expr) -> ir.Expr:
        """``c ? x : y`` with effects in a branch: only the chosen branch runs."""
        a = self.check_value(e.then)
        b = self.check_value(e.other)
        ac, bc, ty = self.branches(e, a, b)  # a branch that changed was an unsized literal: a constant
        if isinstance(ty, IntT):
            raise error(e.loc, "both branches of ?: are unsized integers; give one a width")
        return ir.Conditional(type=ty, loc=e.loc, cond=cond, then=ac, other=bc)

    # ------------------------------------------------------------------ conversions
    def cast_expr(self, e: A.Cast) -> ir.Expr:
        t = self.ctx.resolve_type(e.type)
        return self.cast(self.check_value(e.expr), t, e.loc)

    def cast(self, v: ir.Expr, t: Type, loc: Loc) -> ir.Expr:
        vt = v.type
        if self.converts(vt, v.const, t, loc):
            return self.folded(ir.Cast(type=t, loc=loc, operand=v), v)
        if isinstance(t, BoolT) and isinstance(vt, BoolT) or isinstance(t, EnumT) and vt is t \
                or isinstance(t, StructT) and vt is t or type(t) is type(vt) and t == vt:
            return v
        raise error(loc, f"cannot cast {vt} to {t}")

    @staticmethod
    def converts(vt: Type, const: object, t: Type, loc: Loc) -> bool:
        """Whether ``(t)`` changes a value of type ``vt`` (value ``const`` when known)."""
        if isinstance(t, BitT):
            if isinstance(vt, BoolT) and (t.width != 1 or t.signed):
                raise error(loc, f"cannot cast bool to {t}; only bit<1> holds a bool")
            if isinstance(vt, EnumT) and vt.underlying is not None:
                vt = vt.underlying
            return isinstance(vt, (IntT, BoolT, BitT))
        if isinstance(t, BoolT):
            return isinstance(vt, BitT) and vt.width == 1 and not vt.signed \
                or isinstance(vt, IntT) and const in (0, 1)
        if isinstance(t, IntT):
            return isinstance(vt, (IntT, BitT))
        return isinstance(t, EnumT) and t.underlying is not None and isinstance(vt, (BitT, IntT))

    def in_order(self, items: list[tuple[A.Expr, Type, str]]) -> list[ir.Expr]:
        """``(expression, type, what)`` items converted, evaluated left to right: where
        a later item has side effects, the ones before it are kept in temporaries."""
        nodes = []
        for k, (x, t, what) in enumerate(items):
            node = self.check_as(x, t, what)
            if any(self.ctx.has_effects(y) for y, _, _ in items[k + 1:]):
                node = ir.Spill(type=node.type, loc=node.loc, value=node, how="item")
            nodes.append(node)
        return nodes

    def list_expr(self, e: A.ListExpr) -> ir.Expr:
        items = []
        for k, i in enumerate(e.items):
            v = self.check_value(i)
            items.append(self.spill(v) if any(self.ctx.has_effects(y) for y in e.items[k + 1:]) else v)
        return ir.ListValue(type=TupleT(tuple(i.type for i in items)), loc=e.loc, items=tuple(items))

    def build_struct(self, e: A.ListExpr | A.StructExpr, t: StructT) -> ir.Expr:
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
        return ir.StructBuild(type=t, loc=e.loc, fields=tuple(vals), struct=t)

    @staticmethod
    def struct_expr(e: A.StructExpr) -> ir.Expr:
        raise error(e.loc, "a { field = value } initializer needs a known struct type; "
                    "assign it to a variable or parameter of that type")

    @staticmethod
    def default_expr(e: A.DefaultExpr) -> ir.Expr:
        raise error(e.loc, "'default'/'_' is only allowed in select cases, entries and switch labels")

    @staticmethod
    def mask(e: A.Mask) -> ir.Expr:
        raise error(e.loc, "'&&&' is only allowed in select cases and table entries")

    @staticmethod
    def range(e: A.Range) -> ir.Expr:
        raise error(e.loc, "'..' is only allowed in select cases and table entries")

    def call(self, e: A.Call) -> ir.Expr:
        node = self.ctx.check_call(e)  # the call checker's
        if isinstance(node.type, VoidT):
            raise error(e.loc, f"'{expr_text(e.func)}' does not return a value")
        return ir.CallResult(type=node.type, loc=e.loc, const=node.const, call=e, node=node)
