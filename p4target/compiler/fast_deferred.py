"""The fast path's deferred nodes: the places of ``_fast`` whose code depends on the
whole function's field uses (docs/target-internals.md, "The fast path").

While ``FastCompiler`` (``fast_compiler``) generates a statement, it cannot know yet
which fields the rest of the function reads or writes: which fields an extract must
split out of the header's int (``Split``), which the deparser must put back
(``Emit``), whether anything reads a header's validity (``ValidFlag``), which locals
the function's first lines must set (``Init``, ``LateInit``), how the held-back
counter and register updates are kept and applied (``CountSite``,
``RegisterAccess``, ``Commit``), and so on. Each such place is emitted as a node, and
``FastCompiler.assemble`` renders the nodes once the whole function is generated,
from the uses it recorded (never by rewriting generated text). The nodes live apart
from the compiler because they are that second stage: they only render (or, for
``Copy.settle``, complete) the recorded uses through the compiler's locals
(``fc.names``, ``fc.raw_local``, ...), and never generate statements.

The place keys of the locals (``VALID``, ``DIRTY``, ...), the standard_metadata the
caller gives (``GIVEN``) and ``DROP_PORT`` are defined here and imported by the
compiler, which uses them too. The nodes see the compiler only as a
``RenderContext`` (fast_render.py), so this module does not import it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from p4target.compiler.types import BitT, BoolT, StackT, StructT
from p4target.runtime.bindings import DROP_PORT
from p4target.runtime.traffic import NUM_PRIORITIES

if TYPE_CHECKING:
    from p4target.compiler.fast_render import RenderContext

# the deparser rebuilds a written header's int from its written fields in groups of
# fields at most this many bits apart (each group a short int, shifted once)
EMIT_GROUP_BITS = 64
# standard_metadata given by the caller rather than zero
GIVEN = {("sm", "ingress_port"): "ingress_port", ("sm", "packet_length"): "_dl",
         ("sm", "ingress_global_timestamp"): "now"}
# what a place's key ends with for the locals of a header's validity, int, stack
# index, stack freshness and fields-differ-from-int flag
VALID, RAW, NEXT, TOUCHED, DIRTY = "$v", "$raw", "$next", "$touched", "$dirty"
TAIL = ("$tail",)  # the local holding where the frame's tail starts (frame_tail)


@dataclass
class Deferred:
    """A place of ``_fast`` that ``FastCompiler.assemble`` renders, at indentation ``ind``."""
    ind: str

    def render(self, fc: RenderContext) -> list[str]:
        raise NotImplementedError


@dataclass
class Split(Deferred):
    """After an extract into ``path`` (its bits in ``x``): the fields anything uses."""
    path: tuple[str, ...]
    t: StructT
    x: str
    base: int | None = None  # where the header starts when the parser knows it (else pos)

    def render(self, fc: RenderContext) -> list[str]:
        out = []
        raw = fc.raw_local(self.path)
        if raw != self.x:
            out.append(f"{self.ind}{raw} = {self.x}")
        dirty = fc.names.get(self.path + (DIRTY,))
        if dirty is not None:  # the fields are the int's again
            out.append(f"{self.ind}{dirty} = False")
        after = self.t.width
        for i, (n, ft) in enumerate(self.t.fields):
            w = 1 if isinstance(ft, BoolT) else ft.width  # type: ignore[attr-defined]  # a header's fields are bit<W>, int<W> or bool
            after -= w
            name = fc.names.get(self.path + (n,))
            if name is None:
                continue
            k = (self.t.width - after - w) // 8  # byte offset, when it is byte-aligned
            if (w == 8 or (w == 16 and self.t.width > 64)) and after % 8 == 0 \
                    and isinstance(ft, BitT) and not ft.signed:
                # a byte or two of the frame (pos is still the header's start): cheaper
                # than shifting the header's long int (a short one shifts as cheaply)
                if self.base is None:
                    b = f"data[pos + {k}]" if k else "data[pos]"
                    code = b if w == 8 else f"{b} << 8 | data[pos + {k + 1}]"
                else:
                    b = f"data[{self.base + k}]"
                    code = b if w == 8 else f"{b} << 8 | data[{self.base + k + 1}]"
            else:
                shifted = f"({self.x} >> {after})" if after else self.x
                code = fc.field_from(shifted, ft, w, i != 0)
            out.append(f"{self.ind}{name} = {code}")
        return out


@dataclass
class Emit(Deferred):
    """The deparser's emit of header ``path``: its int with the written fields put back
    (``packed`` when the program writes every field of a wide header)."""
    path: tuple[str, ...]
    t: StructT

    def render(self, fc: RenderContext) -> list[str]:
        packed = self.packed(fc)
        if packed is not None:
            return self.lines(fc, packed)
        full = (1 << self.t.width) - 1
        keep = full
        groups: list[list[tuple[str, int, int]]] = []  # (code, width, bits after it)
        after = self.t.width
        for n, ft in self.t.fields:
            w = 1 if isinstance(ft, BoolT) else ft.width  # type: ignore[attr-defined]  # a header's fields are bit<W>, int<W> or bool
            after -= w
            if self.path + (n,) not in fc.written:
                continue
            code = fc.names[self.path + (n,)]
            if isinstance(ft, BoolT):
                code = f"int({code})"
            elif isinstance(ft, BitT) and ft.signed:
                code = f"({code} & {ft.mask:#x})"
            keep &= ~(((1 << w) - 1) << after)
            g = groups[-1] if groups else None
            if g is not None and g[0][1] + g[0][2] - after <= EMIT_GROUP_BITS:
                g.append((code, w, after))
            else:
                groups.append([(code, w, after)])
        parts = []
        for g in groups:
            # fields within EMIT_GROUP_BITS of each other are put together as a short
            # int, then shifted into place once: a long int's shift or or costs by its
            # length (nic.p4's IPv6 version..hop_limit: one shift of 64 bits, not six)
            low = g[-1][2]
            inner = " | ".join(f"({c} << {a - low})" if a > low else c for c, _w, a in g)
            if len(g) > 1 and low:
                inner = f"({inner})"
            parts.append(f"({inner} << {low})" if low else inner)
        raw = fc.raw_local(self.path)
        if not parts:
            expr = raw
        else:
            expr = " | ".join(([f"({raw} & {keep:#x})"] if keep else []) + parts)
            dirty = fc.names.get(self.path + (DIRTY,))
            if dirty is not None:  # nothing written to it in this packet: the int as it was
                expr = f"({expr}) if {dirty} else {raw}"
        return self.lines(fc, f"({expr}).to_bytes({self.t.width // 8}, 'big')")

    def lines(self, fc: RenderContext, code: str) -> list[str]:
        line = f"_o.append({code})"
        v = fc.valid_local(self.path)
        if v == "True":
            return [f"{self.ind}{line}"]
        return [f"{self.ind}if {v}:", f"{self.ind}    {line}"]

    def packed(self, fc: RenderContext) -> str | None:
        """A header wider than 64 bits whose every field the program writes: its bytes
        packed by one ``struct`` call from its fields, byte-aligned runs of them as
        B/H/I/Q (a short int each) and wider fields as bytes (``to_bytes``; at most
        two, and four values at least, or the int's way is as cheap), instead
        of shifts and ors on a long int (nic.p4's outer IPv6 header of an
        encapsulation: ``>IHBB16s16s``, cheaper than the int's shifts); the int as it was while the
        header's dirty flag is False. None for any other header."""
        if self.t.width <= 64 or any(self.path + (n,) not in fc.written for n, _ in self.t.fields):
            return None
        fmt, args = ">", []
        unit: list[tuple[str, int]] = []  # fields of the run being gathered
        for n, ft in self.t.fields:
            w = 1 if isinstance(ft, BoolT) else ft.width  # type: ignore[attr-defined]  # a header's fields are bit<W>, int<W> or bool
            code = fc.names[self.path + (n,)]
            if isinstance(ft, BoolT):
                code = f"int({code})"
            elif isinstance(ft, BitT) and ft.signed:
                code = f"({code} & {ft.mask:#x})"
            unit.append((code, w))
            bits = sum(x for _, x in unit)
            if bits % 8:
                continue
            if bits in (8, 16, 32, 64):
                fmt += {8: "B", 16: "H", 32: "I", 64: "Q"}[bits]
                after, parts = bits, []
                for c, x in unit:
                    after -= x
                    parts.append(f"({c} << {after})" if after else c)
                args.append(" | ".join(parts))
            elif len(unit) == 1:
                fmt += f"{bits // 8}s"
                args.append(f"{code}.to_bytes({bits // 8})")
            else:
                return None  # (a run of odd widths: the int's way)
            unit = []
        if len(args) < 4 or fmt.count("s") > 2:
            return None  # each to_bytes costs about what a shift of the long int does
        pk = fc.struct_packer(fmt)
        code = f"{pk}({', '.join(args)})"
        dirty = fc.names.get(self.path + (DIRTY,))
        raw = fc.raw_local(self.path)
        return f"({code} if {dirty} else {raw}.to_bytes({self.t.width // 8}, 'big'))" if dirty else code


@dataclass
class ValidFlag(Deferred):
    """An extract's ``valid = True``, only when something reads the header's validity
    (a header the deparser emits as part of the frame's tail may need no flag)."""
    path: tuple[str, ...]

    def render(self, fc: RenderContext) -> list[str]:
        v = fc.names.get(self.path + (VALID,))
        return [f"{self.ind}{v} = True"] if v is not None else []


@dataclass
class SetValid(Deferred):
    """``h.setValid()``: an invalid header becomes valid with every field 0."""
    path: tuple[str, ...]
    t: StructT

    def render(self, fc: RenderContext) -> list[str]:
        v = fc.valid_local(self.path)
        out = [f"{self.ind}if not {v}:", f"{self.ind}    {fc.raw_local(self.path)} = 0"]
        dirty = fc.names.get(self.path + (DIRTY,))
        if dirty is not None:
            out.append(f"{self.ind}    {dirty} = False")
        for n, ft in self.t.fields:
            name = fc.names.get(self.path + (n,))
            if name is not None:
                out.append(f"{self.ind}    {name} = {'False' if isinstance(ft, BoolT) else '0'}")
        out.append(f"{self.ind}    {v} = True")
        return out


@dataclass
class Copy(Deferred):
    """``dst = src`` for headers: the int, the validity and the fields in use."""
    dst: tuple[str, ...]
    src: tuple[str, ...]
    t: StructT
    fields: list[str] = field(default_factory=list)

    def settle(self, fc: RenderContext) -> bool:
        """Name what the copy moves; True when that changed the uses (iterate)."""
        changed = False
        for n, ft in self.t.fields:
            d, s = self.dst + (n,), self.src + (n,)
            if (d in fc.names or s in fc.written) and n not in self.fields:
                self.fields.append(n)
                fc.field_local(d, ft)
                fc.field_local(s, ft)
                changed = True
            if s in fc.written and d not in fc.written:
                fc.written.add(d)
                fc.local(self.dst + (DIRTY,), "False")
                changed = True
        return changed

    def render(self, fc: RenderContext) -> list[str]:
        out = [f"{self.ind}{fc.raw_local(self.dst)} = {fc.raw_local(self.src)}",
               f"{self.ind}{fc.valid_local(self.dst)} = {fc.valid_local(self.src)}"]
        dirty = fc.names.get(self.dst + (DIRTY,))
        if dirty is not None:  # the source's fields may differ from its int
            out.append(f"{self.ind}{dirty} = {fc.names.get(self.src + (DIRTY,), 'False')}")
        for n in self.fields:
            out.append(f"{self.ind}{fc.names[self.dst + (n,)]} = {fc.names[self.src + (n,)]}")
        return out


@dataclass
class TouchStack(Deferred):
    """Before a header stack's elements are used: fresh elements, once per packet (most
    packets never touch the stack, and then pay nothing for its elements)."""
    path: tuple[str, ...]
    t: StackT

    def render(self, fc: RenderContext) -> list[str]:
        touched = fc.local(self.path + (TOUCHED,), "False")
        zeros, falses = [], []
        for i in range(self.t.size):
            ep = self.path + (str(i),)
            zeros.append(fc.raw_local(ep))
            falses.append(fc.valid_local(ep))
            if ep + (DIRTY,) in fc.names:
                falses.append(fc.names[ep + (DIRTY,)])
            for n, ft in self.t.elem.fields:
                if ep + (n,) in fc.names:
                    (falses if isinstance(ft, BoolT) else zeros).append(fc.names[ep + (n,)])
        return [f"{self.ind}if not {touched}:", f"{self.ind}    {' = '.join(zeros)} = 0",
                f"{self.ind}    {' = '.join(falses)} = False", f"{self.ind}    {touched} = True"]


@dataclass
class Init(Deferred):
    """The function's first lines: every local the packet state uses, as a fresh one."""

    def render(self, fc: RenderContext) -> list[str]:
        by_value: dict[str, list[str]] = {}
        out = []
        for path, name in fc.names.items():
            if fc.in_stack_element(path):
                continue  # set when the stack is first touched (TouchStack)
            if fc.set_with_validity(path) or path in fc.first_assigned or path in fc.after_ingress \
                    or path in fc.late_paths:
                continue
            given = GIVEN.get(path)  # type: ignore[arg-type]  # a place of two names or more; GIVEN has those of two
            if given is not None:
                out.append(f"{self.ind}{name} = {given}")
            else:
                by_value.setdefault(fc.defaults[name], []).append(name)
        by_value.setdefault("None", []).extend(
            p for x, p in fc.reg_pending.items() if x in fc.reg_dynamic)
        by_value["None"].extend(fc.reg_cell_local(x, i) for x, i in fc.reg_cells())
        by_value.setdefault("-1", []).extend(
            fc.count_local(x) for x in fc.single_counted() if fc.count_mode(x) == "local")
        if fc.multi_counted():
            out.append(f"{self.ind}_cn = []")
        if fc.direct_counts:
            out.append(f"{self.ind}_dn = []")
        for value, names in by_value.items():
            for i in range(0, len(names), 32):
                out.append(f"{self.ind}{' = '.join(names[i:i + 32])} = {value}")
        return out


@dataclass
class LateInit(Deferred):
    """A metadata field's fresh value where ``LateInits`` put it (if it is used)."""
    path: tuple[str, ...]

    def render(self, fc: RenderContext) -> list[str]:
        name = fc.names.get(self.path)
        return [f"{self.ind}{name} = {fc.defaults[name]}"] if name is not None else []


@dataclass
class CountSite(Deferred):
    """``counter.count(i)``, held back: a counter counted at one place of the
    function (so at most once per packet) is one local, the cell's index or -1;
    one counted at several places appends to the ``_cn`` list."""
    x: str
    index: str

    def render(self, fc: RenderContext) -> list[str]:
        if fc.count_mode(self.x) != "list":
            return [f"{self.ind}{fc.count_local(self.x)} = {self.index}"]
        return [f"{self.ind}_cn.append(({self.x}_p, {self.x}_b, {self.index}))"]


@dataclass
class RegisterAccess(Deferred):
    """``r.read(out, i)`` into ``tmp`` (``value`` None) or ``r.write(i, value)`` with a
    constant index in range, held back until the packet finishes: while every access
    of the register in the function has a constant index, a pending write is one
    local per cell (None: not written); otherwise all go through its ``_reg_`` dict."""
    x: str
    index: int
    mask: int
    tmp: str | None = None
    value: str | None = None

    def render(self, fc: RenderContext) -> list[str]:
        ind, x, i = self.ind, self.x, self.index
        if x not in fc.reg_dynamic:
            c = fc.reg_cell_local(x, i)
            if self.value is None:
                return [f"{ind}{self.tmp} = {c} if {c} is not None else {x}_c[{i}]"]
            return [f"{ind}{c} = {self.value}"]  # (of the cells' type: it fits)
        p = fc.reg_pending[x]
        if self.value is None:
            return [f"{ind}{self.tmp} = {p}[{i}] if {p} is not None and {i} in {p} else {x}_c[{i}]"]
        return [f"{ind}if {p} is None: {p} = {{}}", f"{ind}{p}[{i}] = ({self.value}) & {self.mask:#x}"]


@dataclass
class Commit(Deferred):
    """The held-back counter and register updates, applied."""

    def render(self, fc: RenderContext) -> list[str]:
        ind = self.ind
        out = []
        for x in fc.single_counted():
            c = fc.count_local(x)
            mode = fc.count_mode(x)
            if mode == "always":  # counted by ingress's first statements: on every packet
                out += [f"{ind}{x}_p[{c}] += 1", f"{ind}{x}_b[{c}] += _dl"]
            elif mode == "local":
                out += [f"{ind}if {c} >= 0:", f"{ind}    {x}_p[{c}] += 1", f"{ind}    {x}_b[{c}] += _dl"]
        if fc.multi_counted():
            out += [f"{ind}for _cp, _cb, _ci in _cn:", f"{ind}    _cp[_ci] += 1", f"{ind}    _cb[_ci] += _dl"]
        if fc.direct_counts:
            out += [f"{ind}for _dc in _dn:", f"{ind}    _dc[0] += 1", f"{ind}    _dc[1] += _dl"]
        for x, i in fc.reg_cells():
            c = fc.reg_cell_local(x, i)
            out += [f"{ind}if {c} is not None:", f"{ind}    {x}_c[{i}] = {c}"]
        for x, p in fc.reg_pending.items():
            if x not in fc.reg_dynamic:
                continue
            out += [f"{ind}if {p}:", f"{ind}    for _ri, _rv in {p}.items():",
                    f"{ind}        {x}.cells[_ri] = _rv"]
        return out


@dataclass
class AfterIngress(Deferred):
    """Between ingress and egress: what Switch.inject's direct path does for a unicast
    packet that waits in no queue (or give up for anything else)."""
    before: set[tuple[str, ...]] = field(default_factory=set)  # places named before it

    def render(self, fc: RenderContext) -> list[str]:
        ind = self.ind
        n = fc.names
        out = []
        if ("sm", "mcast_grp") in n:
            out += [f"{ind}if {n['sm', 'mcast_grp']}:", f"{ind}    return None"]
        out.append(f"{ind}_op = {n['sm', 'egress_spec']}")
        out.append(f"{ind}if _op == {DROP_PORT}:")
        out += Commit(ind + "    ").render(fc)
        out.append(f"{ind}    return {DROP_PORT}, None")
        # a port or priority outside the traffic manager's range gives up, unless the
        # field's width already rules it out (every local holds a value of its type)
        conds = []
        if fc.sm_width("egress_spec") > 9:
            conds.append(f"not 0 <= _op < {DROP_PORT}")
        if ("sm", "priority") in n and fc.sm_width("priority") > 3:
            conds.append(f"not 0 <= {n['sm', 'priority']} < {NUM_PRIORITIES}")
        if conds:
            out += [f"{ind}if {' or '.join(conds)}:", f"{ind}    return None"]
        for f, v in (("enq_timestamp", "now"), ("enq_qdepth", "0"), ("egress_global_timestamp", "now"),
                     ("deq_timedelta", "0"), ("deq_qdepth", "0"), ("egress_port", "_op"),
                     ("egress_spec", "0")):
            if ("sm", f) in n:
                out.append(f"{ind}{n['sm', f]} = {v}")
                # egress_spec was read just above: it is set first here only when
                # something set it before (else Init must give it its fresh value)
                if ("sm", f) not in self.before and f != "egress_spec":
                    fc.after_ingress.add(("sm", f))  # set here first, on every packet
        return out
