"""The type checker of packet_in's and packet_out's methods: ``extract``,
``extract<T>(_)``, ``advance``, ``lookahead`` and ``emit`` become typed calls
(ir.py), every error of them raised with its place; packet_io.py writes them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from p4target.compiler import ir
from p4target.compiler.packet_io import fixed_layout, has_varbit
from p4target.compiler.types import BitT, IntT, StackT, StructT, Type, VarbitT, VoidT
from p4target.frontend import ast as A
from p4target.frontend.source import Loc, error, unsupported

if TYPE_CHECKING:
    from p4target.compiler.context import CompilerContext
    from p4target.compiler.typecheck_expr import ExprChecker
    from p4target.compiler.typecheck_stmt import StmtChecker


class PacketChecker:
    """The packet methods called in the program compiler ``ctx``, typed and checked;
    their arguments are ``exprs``' (the expression checker), their l-values
    ``stmts``' rules; ``nargs`` refuses a call with another number of arguments."""

    def __init__(self, ctx: CompilerContext, exprs: ExprChecker, stmts: StmtChecker) -> None:
        self.ctx = ctx
        self.exprs = exprs
        self.stmts = stmts

    def nargs(self, e: A.Call, *counts: int) -> None:
        self.ctx.nargs(e, *counts)

    # ------------------------------------------------------------------ packet_in
    def packet_in_method(self, e: A.Call, name: str) -> ir.Call:
        if self.ctx.fn_kind != "parser":
            raise error(e.loc, f"packet_in.{name} is only available in a parser")
        if name == "extract" and len(e.args) == 1 and e.args[0].value is None:
            return self.skip_header(e)  # extract<T>(_)
        if name == "extract":
            self.nargs(e, 1, 2)
            length = e.args[1].value if len(e.args) == 2 else None
            return self.extract(e.args[0].value, length, e.loc)  # type: ignore[arg-type]  # nargs refused '_'
        if name == "advance":
            self.nargs(e, 1)
            bits = self.exprs.check_value(e.args[0].value)  # type: ignore[arg-type]  # as above
            if bits.const is not None and int(bits.const) % 8:
                raise unsupported(e.loc, "advance by a number of bits that is not a multiple of 8",
                                  "advance by whole bytes")
            return ir.Advance(loc=e.loc, type=VoidT(), bits=bits)
        if name == "lookahead":
            return ir.Lookahead(loc=e.loc, type=self.lookahead_type(e))
        if name == "length":
            raise unsupported(e.loc, "packet_in.length()", "v1model (BMv2) does not support it either")
        raise error(e.loc, f"packet_in has no method '{name}'")

    def lookahead_type(self, e: A.Call) -> Type:
        if len(e.type_args) != 1:
            raise error(e.loc, "lookahead needs a type argument: lookahead<T>()")
        t = self.ctx.resolve_type(e.type_args[0])
        if isinstance(t, BitT) or isinstance(t, StructT) and t.kind == "header" and not has_varbit(t):
            return t
        if isinstance(t, StructT) and t.kind == "header":
            raise error(e.loc, f"lookahead<{t.name}>: the header has a varbit field; lookahead needs a "
                        "fixed-size type")
        if isinstance(t, StructT) and t.kind == "struct" and fixed_layout(t):
            return t
        raise unsupported(e.loc, f"lookahead<{t}>", "look ahead at bit<W>, a fixed header or a "
                          "struct of bit<W> fields, fixed headers and stacks of them")

    def skip_header(self, e: A.Call) -> ir.SkipHeader:
        if len(e.type_args) != 1:
            raise error(e.loc, "extract(_) needs the header type: extract<T>(_)")
        t = self.ctx.resolve_type(e.type_args[0])
        if not isinstance(t, StructT) or t.kind != "header":
            raise error(e.loc, f"extract needs a header type, not {t}")
        if has_varbit(t):
            raise unsupported(e.loc, "extract<T>(_) of a header with a varbit field",
                              "extract it into a header and ignore it")
        return ir.SkipHeader(loc=e.loc, type=VoidT(), header=t)

    def extract(self, target: A.Expr, length: A.Expr | None, loc: Loc) -> ir.Extract:
        stack_next = isinstance(target, A.Member) and target.name == "next" and isinstance(
            self.exprs.check_value(target.obj).type, StackT)
        # s.next.m of a stack of header unions: member m of the next element
        union_next = not stack_next and isinstance(target, A.Member) and isinstance(
            target.obj, A.Member) and target.obj.name == "next" and isinstance(
            self.exprs.check_value(target.obj.obj).type, StackT)
        place = parent = stack = None
        member = None
        if stack_next or union_next:
            stack = self.exprs.check_value(target.obj if stack_next else target.obj.obj)  # type: ignore[attr-defined]  # a union member's object is itself a Member (union_next)
            st_t = stack.type
            assert isinstance(st_t, StackT)
            t = st_t.elem
            if union_next:
                assert isinstance(target, A.Member)
                mt = t.field_type(target.name) if t.kind == "header_union" else None
                if mt is None:
                    raise error(target.loc, f"{t} has no member '{target.name}'")
                member = target.name
                place = self.exprs.check_value(target)
                t = mt  # type: ignore[assignment]  # the union member's header type
            elif t.kind == "header_union":
                raise error(target.loc, "extract into an element of a stack of header unions names "
                            "the member: extract(s.next.<member>)")
        else:
            self.stmts.check_lvalue(target)
            place = self.exprs.check_value(target)
            if not isinstance(place.type, StructT) or place.type.kind != "header":
                raise error(target.loc, f"extract needs a header, not {place.type}")
            t = place.type
            if isinstance(place, ir.Field):  # a member: of a header union, its siblings become invalid
                parent = place.base
        varbits = [n for n, ft in t.fields if isinstance(ft, VarbitT)]
        size = None
        if varbits:
            size = self.varbit_length(t, varbits, length, loc)
        elif length is not None:
            raise error(loc, f"header {t.name} has no varbit field; call extract(hdr) with one argument")
        return ir.Extract(loc=loc, type=VoidT(), place=place, parent=parent, stack=stack, member=member,
                               header=t, length=size, varbit=varbits[0] if varbits else None)

    def varbit_length(self, t: StructT, varbits: list[str], length: A.Expr | None, loc: Loc) -> ir.Expr:
        if length is None:
            raise error(loc, f"header {t.name} has a varbit field; extract it with a length: "
                        "extract(hdr, (bit<32>)bits)")
        if len(varbits) > 1:
            raise unsupported(loc, "a header with more than one varbit field", "use one")
        lv = self.exprs.check_value(length)
        if not isinstance(lv.type, (BitT, IntT)):
            raise error(length.loc, f"varbit length must be an integer, not {lv.type}")
        return lv

    # ------------------------------------------------------------------ packet_out
    def emit(self, e: A.Call, f: A.Member) -> ir.EmitHeaders:
        if f.name != "emit":
            raise error(f.loc, f"packet_out has no method '{f.name}'; use emit")
        self.nargs(e, 1)
        value = self.exprs.check_value(e.args[0].value)  # type: ignore[arg-type]  # nargs refused '_'
        self.emittable(value.type, e.args[0].loc)
        return ir.EmitHeaders(loc=e.loc, type=VoidT(), value=value)

    def emittable(self, t: Type, loc: Loc) -> None:
        """Refuse a value ``emit`` cannot write (its first member that is not a header,
        stack, union or struct of them, in field order)."""
        if isinstance(t, StructT) and t.kind != "header":
            for _, ft in t.fields:
                self.emittable(ft, loc)
        elif not isinstance(t, (StructT, StackT)):
            raise error(loc, f"emit needs a header, header stack, union or struct of headers, not {t}")
