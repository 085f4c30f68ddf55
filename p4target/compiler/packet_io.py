"""Code generation of the packet_in methods (extract, lookahead, advance) in parser
states and of packet_out.emit in the deparser: one int.from_bytes per header and
shifts/masks to split it; one int.to_bytes per valid header to emit it."""

from __future__ import annotations

from p4target.compiler.context import CompilerContext
from p4target.compiler.values import V
from p4target.compiler.naming import pyfield
from p4target.compiler.types import BitT, BoolT, EnumT, IntT, StackT, StructT, Type, VarbitT, bit_width
from p4target.frontend import ast as A
from p4target.frontend.source import Loc, error, unsupported



def fixed_layout(t: Type) -> bool:
    """A type ``lookahead<struct>`` can fill from the packet's bits: bit<W>, int<W>,
    bool and serializable-enum leaves, nested structs, headers without varbit fields
    and stacks of such headers."""
    if isinstance(t, (BitT, BoolT)) or (isinstance(t, EnumT) and t.underlying is not None):
        return True
    if isinstance(t, StackT):
        return t.elem.kind == "header" and fixed_layout(t.elem)
    return isinstance(t, StructT) and t.kind in ("struct", "header") and all(fixed_layout(ft) for _, ft in t.fields)

class PacketIO:
    """packet_in's and packet_out's methods of the program compiler ``ctx``, emitted
    through it. ``FastPacketIO`` (fast_packet_io.py) is the fast compiler's."""

    def __init__(self, ctx: CompilerContext) -> None:
        self.ctx = ctx

    # ------------------------------------------------------------------ packet_in
    def packet_in_method(self, e: A.Call, name: str) -> V | None:
        if self.ctx.fn_kind != "parser":
            raise error(e.loc, f"packet_in.{name} is only available in a parser")
        if name == "extract" and len(e.args) == 1 and e.args[0].value is None:
            self.skip_header(e)  # extract<T>(_)
            return None
        if name == "extract":
            self.ctx.nargs(e, 1, 2)
            self.extract(self.ctx.arg(e, 0), self.ctx.arg(e, 1) if len(e.args) == 2 else None, e.loc)
            return None
        if name == "advance":
            self.ctx.nargs(e, 1)
            v = self.ctx.value(self.ctx.arg(e, 0))
            short = self.ctx.errors_by_name["PacketTooShort"]
            if v.const is not None:
                n = int(v.const)
                if n % 8:
                    raise unsupported(e.loc, "advance by a number of bits that is not a multiple of 8",
                                      "advance by whole bytes")
                self.ctx.emit(f"if pos + {n // 8} > len(data): raise ParserError({short}, pos)")
                self.ctx.emit(f"pos += {n // 8}")
            else:
                a = self.ctx.tmp("adv")
                bad = self.ctx.errors_by_name["ParserInvalidArgument"]
                self.ctx.emit(f"{a} = {v.code}")
                self.ctx.emit(f"if {a} & 7: raise ParserError({bad}, pos)")
                self.ctx.emit(f"if pos + ({a} >> 3) > len(data): raise ParserError({short}, pos)")
                self.ctx.emit(f"pos += {a} >> 3")
            return None
        if name == "lookahead":
            if len(e.type_args) != 1:
                raise error(e.loc, "lookahead needs a type argument: lookahead<T>()")
            t = self.ctx.resolve_type(e.type_args[0])
            short = self.ctx.errors_by_name["PacketTooShort"]
            if isinstance(t, BitT):
                nbytes = (t.width + 7) // 8
                code = f"lookahead(data, pos, {nbytes}, {nbytes * 8 - t.width}, {short})"
                if t.signed:
                    code = f"(({code} ^ {1 << (t.width - 1)}) - {1 << (t.width - 1)})"
                return V(code, t)
            if isinstance(t, StructT) and t.kind == "header" and not self.has_varbit(t):
                return V(f"{t.pyname}.unpack(lookahead(data, pos, {t.width // 8}, 0, {short}))", t)
            if isinstance(t, StructT) and t.kind == "header":
                raise error(e.loc, f"lookahead<{t.name}>: the header has a varbit field; lookahead needs a "
                            "fixed-size type")
            if isinstance(t, StructT) and t.kind == "struct" and fixed_layout(t):
                nbytes = (t.width + 7) // 8
                x = self.ctx.tmp("la")
                self.ctx.emit(f"{x} = lookahead(data, pos, {nbytes}, {nbytes * 8 - t.width}, {short})")
                return V(self.unpack_struct(t, x), t)
            raise unsupported(e.loc, f"lookahead<{t}>", "look ahead at bit<W>, a fixed header or a "
                              "struct of bit<W> fields, fixed headers and stacks of them")
        if name == "length":
            raise unsupported(e.loc, "packet_in.length()", "v1model (BMv2) does not support it either")
        raise error(e.loc, f"packet_in has no method '{name}'")

    def skip_header(self, e: A.Call) -> None:
        """``extract<T>(_)``: T's bytes are consumed (PacketTooShort when missing) and
        dropped."""
        if len(e.type_args) != 1:
            raise error(e.loc, "extract(_) needs the header type: extract<T>(_)")
        t = self.ctx.resolve_type(e.type_args[0])
        if not isinstance(t, StructT) or t.kind != "header":
            raise error(e.loc, f"extract needs a header type, not {t}")
        if self.has_varbit(t):
            raise unsupported(e.loc, "extract<T>(_) of a header with a varbit field",
                              "extract it into a header and ignore it")
        short = self.ctx.errors_by_name["PacketTooShort"]
        self.ctx.emit(f"if pos + {t.width // 8} > len(data): raise ParserError({short}, pos)")
        self.ctx.emit(f"pos += {t.width // 8}")

    def has_varbit(self, t: StructT) -> bool:
        return any(isinstance(ft, VarbitT) for _, ft in t.fields)

    def extract(self, target: A.Expr, length: A.Expr | None, loc: Loc) -> None:
        h, t, sv = self.extract_place(target)
        varbits = [n for n, ft in t.fields if isinstance(ft, VarbitT)]
        x = self.ctx.tmp("x")
        if varbits:
            self.extract_varbit(t, h, x, varbits, length, loc)
        else:
            self.extract_fixed(t, h, x, length, loc)
        if sv is None:
            self.ctx.invalidate_union_siblings(target)
        self.ctx.emit(f"{h}._v = True")
        if sv is not None:
            self.ctx.emit(f"{sv}.nxt += 1")

    def extract_place(self, target: A.Expr) -> tuple[str, StructT, str | None]:
        """Where ``extract(target)`` writes: (the header's local, its type, the stack's
        local when it is ``s.next`` or ``s.next.member`` of a stack of unions, else None)."""
        stack_next = isinstance(target, A.Member) and target.name == "next" and isinstance(
            self.ctx.type_of(target.obj), StackT)
        # s.next.m of a stack of header unions: member m of the next element
        union_next = not stack_next and isinstance(target, A.Member) and isinstance(
            target.obj, A.Member) and target.obj.name == "next" and isinstance(
            self.ctx.type_of(target.obj.obj), StackT)
        if stack_next or union_next:
            s = self.ctx.value(target.obj if stack_next else target.obj.obj)  # type: ignore[attr-defined]  # a union member's object is itself a Member (union_next)
            st_t = s.type
            assert isinstance(st_t, StackT)
            sv = self.ctx.tmp("s")
            self.ctx.emit(f"{sv} = {s.code}")
            self.ctx.emit(f"if {sv}.nxt >= {st_t.size}: raise ParserError("
                      f"{self.ctx.errors_by_name['StackOutOfBounds']}, pos)")
            h = self.ctx.tmp("h")
            t = st_t.elem
            if union_next:
                assert isinstance(target, A.Member)
                mt = t.field_type(target.name) if t.kind == "header_union" else None
                if mt is None:
                    raise error(target.loc, f"{t} has no member '{target.name}'")
                u = self.ctx.tmp("u")
                self.ctx.emit(f"{u} = {sv}.h[{sv}.nxt]")
                for n, _ in t.fields:  # the union's other members become invalid
                    if n != target.name:
                        self.ctx.emit(f"{u}.{pyfield(n)}._v = False")
                self.ctx.emit(f"{h} = {u}.{pyfield(target.name)}")
                t = mt  # type: ignore[assignment]  # the union member's header type
            elif t.kind == "header_union":
                raise error(target.loc, "extract into an element of a stack of header unions names "
                            "the member: extract(s.next.<member>)")
            else:
                self.ctx.emit(f"{h} = {sv}.h[{sv}.nxt]")
            return h, t, sv
        else:
            self.ctx.check_lvalue(target)
            v = self.ctx.value(target)
            if not isinstance(v.type, StructT) or v.type.kind != "header":
                raise error(target.loc, f"extract needs a header, not {v.type}")
            t = v.type
            h = self.ctx.tmp("h")
            self.ctx.emit(f"{h} = {v.code}")
            return h, t, None

    def extract_varbit(self, t: StructT, h: str, x: str, varbits: list[str], length: A.Expr | None,
                       loc: Loc) -> None:
        """Extract a header with a varbit field of ``length`` bits."""
        short = self.ctx.errors_by_name["PacketTooShort"]
        if length is None:
            raise error(loc, f"header {t.name} has a varbit field; extract it with a length: "
                        "extract(hdr, (bit<32>)bits)")
        if len(varbits) > 1:
            raise unsupported(loc, "a header with more than one varbit field", "use one")
        vb = varbits[0]
        lv = self.ctx.value(length)
        if not isinstance(lv.type, (BitT, IntT)):
            raise error(length.loc, f"varbit length must be an integer, not {lv.type}")
        vmax = t.field_type(vb).max_width  # type: ignore[union-attr]  # vb names the header's varbit field
        ln = self.ctx.tmp("len")
        fixed = t.width - vmax
        self.ctx.emit(f"{ln} = {lv.code}")
        self.ctx.emit(f"if {ln} > {vmax}: raise ParserError({self.ctx.errors_by_name['HeaderTooShort']}, pos)")
        self.ctx.emit(f"if ({ln} + {fixed}) & 7: raise ParserError("
                  f"{self.ctx.errors_by_name['ParserInvalidArgument']}, pos)")
        end = self.ctx.tmp("end")
        self.ctx.emit(f"{end} = pos + (({ln} + {fixed}) >> 3)")
        self.ctx.emit(f"if {end} > len(data): raise ParserError({short}, pos)")
        self.ctx.emit(f"{x} = int.from_bytes(data[pos:{end}], 'big')")
        after = 0
        shifts: dict[str, str] = {}
        for n, ft in reversed(t.fields):
            if isinstance(ft, VarbitT):
                shifts[n] = str(after)
                continue
            shifts[n] = f"{after} + {ln}" if _before(t, n, vb) else str(after)
            after += ft.width if isinstance(ft, BitT) else 1
        for n, ft in t.fields:
            if isinstance(ft, VarbitT):
                self.ctx.emit(f"{h}.{pyfield(n)} = ({x} >> {shifts[n]}) & ((1 << {ln}) - 1)")
                self.ctx.emit(f"{h}._len_{n} = {ln}")
            else:
                w = ft.width if isinstance(ft, BitT) else 1
                self.ctx.emit(f"{h}.{pyfield(n)} = {self.field_from(f'({x} >> ({shifts[n]}))', ft, w, True)}")
        self.ctx.emit(f"pos = {end}")

    def extract_fixed(self, t: StructT, h: str, x: str, length: A.Expr | None, loc: Loc) -> None:
        short = self.ctx.errors_by_name["PacketTooShort"]
        if length is not None:
            raise error(loc, f"header {t.name} has no varbit field; call extract(hdr) with one argument")
        nbytes = t.width // 8
        self.ctx.emit(f"if pos + {nbytes} > len(data): raise ParserError({short}, pos)")
        self.ctx.emit(f"{x} = int.from_bytes(data[pos:pos + {nbytes}], 'big')")
        for line in self.unpack_lines(t, h, x):
            self.ctx.emit(line)
        self.ctx.emit(f"pos += {nbytes}")

    def field_from(self, shifted: str, ft: Type, w: int, need_mask: bool) -> str:
        code = f"{shifted} & {(1 << w) - 1:#x}" if need_mask else shifted
        if isinstance(ft, BoolT):
            return f"bool({code})"
        if isinstance(ft, BitT) and ft.signed:
            return f"((({code}) ^ {1 << (w - 1)}) - {1 << (w - 1)})"
        return code

    def unpack_lines(self, t: StructT, h: str, x: str) -> list[str]:
        """Field assignments that split the integer ``x`` into header ``h``'s fields
        (a struct-typed field's own fields, inline, in order)."""
        lines = []
        after = t.width
        for i, (path, ft) in enumerate(wire_leaves(t)):
            w = 1 if isinstance(ft, BoolT) else ft.width  # type: ignore[attr-defined]  # a header's fields are bit<W>, int<W> or bool
            after -= w
            shifted = f"({x} >> {after})" if after else x
            lines.append(f"{h}.{path} = {self.field_from(shifted, ft, w, i != 0)}")
        return lines

    def unpack_struct(self, t: StructT, x: str) -> str:
        """An expression building a struct of ``t`` from the integer ``x`` of its wire
        bits (``lookahead<struct>``): ``mk_S(...)`` nested like the struct."""
        after = t.width

        def build(st: StructT) -> str:
            nonlocal after
            args = []
            for _n, ft in st.fields:
                if isinstance(ft, StructT):  # a header in it is valid, as BMv2 makes it
                    args.append(build(ft))
                    continue
                if isinstance(ft, StackT):  # every element valid, nextIndex 0 (as BMv2)
                    elems = [build(ft.elem) for _ in range(ft.size)]
                    args.append(f"Stack.of({ft.elem.pyname}, [{', '.join(elems)}])")
                    continue
                w = 1 if isinstance(ft, BoolT) else bit_width(ft)
                after -= w
                shifted = f"({x} >> {after})" if after else x
                args.append(self.field_from(shifted, ft, w, True))
            return f"mk_{st.pyname}({', '.join(args)})"

        return build(t)

    # ------------------------------------------------------------------ packet_out
    def emit_header(self, v: V, loc: Loc) -> None:
        t = v.type
        if isinstance(t, StructT) and t.kind == "header":
            h = self.ctx.tmp("h")
            self.ctx.emit(f"{h} = {v.code}")
            self.ctx.emit(f"if {h}._v:")
            self.ctx.indent()
            self.ctx.emit(f"ap({self.pack_code(t, h)})")
            self.ctx.dedent()
        elif isinstance(t, StructT):  # struct or header_union: every member in order
            for n, ft in t.fields:
                self.emit_header(V(f"{v.code}.{pyfield(n)}", ft), loc)
        elif isinstance(t, StackT):
            h = self.ctx.tmp("h")
            self.ctx.emit(f"for {h} in {v.code}.h:")
            self.ctx.indent()
            if t.elem.kind == "header_union":  # each element: its valid member, if any
                for n, mt in t.elem.fields:
                    self.ctx.emit(f"if {h}.{pyfield(n)}._v:")
                    self.ctx.emit(f"    ap({self.pack_code(mt, f'{h}.{pyfield(n)}')})")  # type: ignore[arg-type]  # a union's members are headers
            else:
                self.ctx.emit(f"if {h}._v:")
                self.ctx.indent()
                self.ctx.emit(f"ap({self.pack_code(t.elem, h)})")
                self.ctx.dedent()
            self.ctx.dedent()
        else:
            raise error(loc, f"emit needs a header, header stack, union or struct of headers, not {t}")

    def pack_code(self, t: StructT, h: str) -> str:
        """Code for the wire bytes of valid header ``h`` (network order, MSB first)."""
        varbit = next((n for n, ft in t.fields if isinstance(ft, VarbitT)), None)
        parts = []
        after_fixed = 0
        for n, ft in reversed(wire_leaves(t)):  # n: the attribute path, "f" or "s.f"
            if isinstance(ft, VarbitT):
                continue
            w = 1 if isinstance(ft, BoolT) else ft.width  # type: ignore[attr-defined]  # a header's fields are bit<W>, int<W> or bool
            fc = f"{h}.{n}"
            if isinstance(ft, BitT) and ft.signed:
                fc = f"({fc} & {ft.mask:#x})"
            elif isinstance(ft, BoolT):
                fc = f"int({fc})"
            dyn = varbit is not None and _before(t, n, varbit)
            shift = f"({after_fixed} + {h}._len_{varbit})" if dyn else str(after_fixed)
            parts.append(fc if shift == "0" else f"({fc} << {shift})")
            after_fixed += w
        if varbit is not None:
            fc = f"{h}.{pyfield(varbit)}"
            parts.append(f"({fc} << {_after_width(t, varbit)})")
            nbytes = f"(({t.width - t.field_type(varbit).max_width} + {h}._len_{varbit}) >> 3)"  # type: ignore[union-attr]  # as above: the varbit field exists
        else:
            nbytes = str(t.width // 8)
        return f"({' | '.join(reversed(parts))}).to_bytes({nbytes}, 'big')"


def wire_leaves(t: StructT, prefix: str = "") -> list[tuple[str, Type]]:
    """The wire fields of a header in order, as (attribute path, type): a struct-typed
    field contributes its own fields (``s.f``); a serializable enum its underlying type."""
    out: list[tuple[str, Type]] = []
    for n, ft in t.fields:
        path = prefix + pyfield(n)
        if isinstance(ft, StructT):
            out += wire_leaves(ft, path + ".")
        elif isinstance(ft, EnumT) and ft.underlying is not None:
            out.append((path, ft.underlying))
        else:
            out.append((path, ft))
    return out


def _before(t: StructT, field: str, varbit: str) -> bool:
    """True when ``field`` comes before the varbit field (its shift depends on the length)."""
    names = [n for n, _ in t.fields]
    return names.index(field) < names.index(varbit)


def _after_width(t: StructT, varbit: str) -> int:
    names = [n for n, _ in t.fields]
    i = names.index(varbit)
    return sum((1 if isinstance(ft, BoolT) else ft.width) for _, ft in t.fields[i + 1:])  # type: ignore[attr-defined, misc]  # a header's fields are bit<W>, int<W> or bool




