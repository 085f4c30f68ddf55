"""Code generation of the packet_in methods (extract, lookahead, advance) in parser
states and of packet_out.emit in the deparser, from their typed calls (ir.py,
checked by typecheck_packet.py): one int.from_bytes per header and shifts/masks to
split it; one int.to_bytes per valid header to emit it."""

from __future__ import annotations

from p4target.compiler import ir
from p4target.compiler.context import CompilerContext
from p4target.compiler.emit_call import invalidate_siblings
from p4target.compiler.values import V
from p4target.compiler.naming import pyfield
from p4target.compiler.types import BitT, BoolT, EnumT, StackT, StructT, Type, VarbitT, bit_width
from p4target.frontend.source import Loc



def fixed_layout(t: Type) -> bool:
    """A type ``lookahead<struct>`` can fill from the packet's bits: bit<W>, int<W>,
    bool and serializable-enum leaves, nested structs, headers without varbit fields
    and stacks of such headers."""
    if isinstance(t, (BitT, BoolT)) or (isinstance(t, EnumT) and t.underlying is not None):
        return True
    if isinstance(t, StackT):
        return t.elem.kind == "header" and fixed_layout(t.elem)
    return isinstance(t, StructT) and t.kind in ("struct", "header") and all(fixed_layout(ft) for _, ft in t.fields)

def has_varbit(t: StructT) -> bool:
    return any(isinstance(ft, VarbitT) for _, ft in t.fields)


class PacketIO:
    """packet_in's and packet_out's methods of the program compiler ``ctx``, emitted
    through it. ``FastPacketIO`` (fast_packet_io.py) is the fast compiler's."""

    def __init__(self, ctx: CompilerContext) -> None:
        self.ctx = ctx

    def write(self, node: ir.Call) -> V | None:
        """The code of a checked packet method call (the packet nodes of ``ir.py``)."""
        if isinstance(node, ir.Extract):
            self.extract(node)
        elif isinstance(node, ir.SkipHeader):
            self.skip_header(node)
        elif isinstance(node, ir.Advance):
            self.advance(node)
        elif isinstance(node, ir.Lookahead):
            return self.lookahead(node.type)
        elif isinstance(node, ir.EmitHeaders):
            self.emit_header(self.ctx.emit_expr(node.value), node.loc)
        return None

    # ------------------------------------------------------------------ packet_in
    def advance(self, node: ir.Advance) -> None:
        v = self.ctx.emit_expr(node.bits)
        short = self.ctx.errors_by_name["PacketTooShort"]
        if v.const is not None:
            n = int(v.const)
            self.ctx.emit(f"if pos + {n // 8} > len(data): raise ParserError({short}, pos)")
            self.ctx.emit(f"pos += {n // 8}")
        else:
            a = self.ctx.tmp("adv")
            bad = self.ctx.errors_by_name["ParserInvalidArgument"]
            self.ctx.emit(f"{a} = {v.code}")
            self.ctx.emit(f"if {a} & 7: raise ParserError({bad}, pos)")
            self.ctx.emit(f"if pos + ({a} >> 3) > len(data): raise ParserError({short}, pos)")
            self.ctx.emit(f"pos += {a} >> 3")

    def lookahead(self, t: Type) -> V:
        """The next bits of the packet as a value of ``t``, the position unchanged."""
        short = self.ctx.errors_by_name["PacketTooShort"]
        if isinstance(t, BitT):
            nbytes = (t.width + 7) // 8
            code = f"lookahead(data, pos, {nbytes}, {nbytes * 8 - t.width}, {short})"
            if t.signed:
                code = f"(({code} ^ {1 << (t.width - 1)}) - {1 << (t.width - 1)})"
            return V(code, t)
        assert isinstance(t, StructT)  # the checker allows bit<W>, int<W>, fixed headers and structs
        if t.kind == "header":
            return V(f"{t.pyname}.unpack(lookahead(data, pos, {t.width // 8}, 0, {short}))", t)
        nbytes = (t.width + 7) // 8
        x = self.ctx.tmp("la")
        self.ctx.emit(f"{x} = lookahead(data, pos, {nbytes}, {nbytes * 8 - t.width}, {short})")
        return V(self.unpack_struct(t, x), t)

    def skip_header(self, node: ir.SkipHeader) -> None:
        """``extract<T>(_)``: T's bytes are consumed (PacketTooShort when missing) and
        dropped."""
        t = node.header
        short = self.ctx.errors_by_name["PacketTooShort"]
        self.ctx.emit(f"if pos + {t.width // 8} > len(data): raise ParserError({short}, pos)")
        self.ctx.emit(f"pos += {t.width // 8}")

    def extract(self, node: ir.Extract) -> None:
        h, t, sv = self.extract_place(node)
        x = self.ctx.tmp("x")
        if node.varbit is not None:
            self.extract_varbit(t, h, x, node.varbit, node.length)  # type: ignore[arg-type]  # a varbit header is extracted with its length
        else:
            self.extract_fixed(t, h, x)
        if node.parent is not None:
            invalidate_siblings(self.ctx, self.ctx.emit_expr(node.parent),
                                node.place.name)  # type: ignore[union-attr]  # a member's place is a Field
        self.ctx.emit(f"{h}._v = True")
        if sv is not None:
            self.ctx.emit(f"{sv}.nxt += 1")

    def extract_place(self, node: ir.Extract) -> tuple[str, StructT, str | None]:
        """Where ``extract`` writes: (the header's local, its type, the stack's local
        when it is ``s.next`` or ``s.next.member`` of a stack of unions, else None)."""
        emit = self.ctx.emit_expr
        if node.stack is not None:
            s = emit(node.stack)
            st_t = s.type
            assert isinstance(st_t, StackT)
            sv = self.ctx.tmp("s")
            self.ctx.emit(f"{sv} = {s.code}")
            self.ctx.emit(f"if {sv}.nxt >= {st_t.size}: raise ParserError("
                          f"{self.ctx.errors_by_name['StackOutOfBounds']}, pos)")
            h = self.ctx.tmp("h")
            if node.member is not None:
                u = self.ctx.tmp("u")
                self.ctx.emit(f"{u} = {sv}.h[{sv}.nxt]")
                for n, _ in st_t.elem.fields:  # the union's other members become invalid
                    if n != node.member:
                        self.ctx.emit(f"{u}.{pyfield(n)}._v = False")
                self.ctx.emit(f"{h} = {u}.{pyfield(node.member)}")
            else:
                self.ctx.emit(f"{h} = {sv}.h[{sv}.nxt]")
            return h, node.header, sv
        v = emit(node.place)  # type: ignore[arg-type]  # a header outside a stack has its place
        h = self.ctx.tmp("h")
        self.ctx.emit(f"{h} = {v.code}")
        return h, node.header, None

    def extract_varbit(self, t: StructT, h: str, x: str, vb: str, length: ir.Expr) -> None:
        """Extract a header with the varbit field ``vb`` of ``length`` bits."""
        short = self.ctx.errors_by_name["PacketTooShort"]
        lv = self.ctx.emit_expr(length)
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

    def extract_fixed(self, t: StructT, h: str, x: str) -> None:
        short = self.ctx.errors_by_name["PacketTooShort"]
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




