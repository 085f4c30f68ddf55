"""The fast path's packet state and how its expressions read it
(``FastPlaceCode``, the ``PlaceWriter`` that ``FastCompiler``,
``fast_compiler``, gives the generator of its ``ExpressionCompiler``): where each
place of the packet state lives in ``_fast`` (a local per field, validity flag,
header int and stack index, named by ``local``), and the code reading a field there
(``leaf_value``): the caller's value for the standard_metadata it gives, the
header's int or the frame's bytes for a field nothing assigns, else its local.
Names, fields and stack elements of the packet state are such places; a header or
struct of it used as a value becomes an object like the general path's
(``convert``). The expressions are checked by the general type checker
(typecheck_expr.py) and written by the general generator (emit_expr.py); this
module only says how their places are written.
"""

from __future__ import annotations

import re

from p4target.compiler.context import FastContext
from p4target.compiler import ir
from p4target.compiler.emit_expr import PlaceCode
from p4target.compiler.values import V
from p4target.compiler.fast_deferred import GIVEN, NEXT, RAW, TOUCHED, VALID
from p4target.compiler.fast_errors import NoFast
from p4target.compiler.naming import pyfield
from p4target.compiler.scope import Sym
from p4target.compiler.types import BitT, BoolT, StackT, StructT, Type

_CLOCK = {("sm", "ingress_global_timestamp"), ("sm", "enq_timestamp"),
          ("sm", "egress_global_timestamp")}


class FastPlaceCode:
    """The fast compiler's (``ctx``'s) packet state: its locals (``ctx.names``,
    ``ctx.defaults``) and, as the ``PlaceWriter`` of its expressions' generator, the
    places reading them; a place that is not the packet state's is written as
    ``general`` (the general path's ``PlaceCode``) writes it."""

    def __init__(self, ctx: FastContext) -> None:
        self.ctx = ctx
        self.general = PlaceCode(ctx)

    # ---- names of the packet state ---------------------------------------------------
    def start_local(self, path: tuple[str, ...]) -> str:
        # set by the extract only (set_with_validity): reading a field of a header
        # never extracted raises, and the general path runs the frame
        return self.local(path + ("$start",), "_dl")

    def set_with_validity(self, path: tuple[str, ...]) -> bool:
        """A header's int, dirty flag, field locals or (bytes-backed) start: assigned
        wherever the header becomes valid (extract, setValid, a copy), so Init leaves
        them out; most packets
        never have most headers. A packet that reads one of a header never valid (or
        copies such a header) meets an unbound local: the fast path raises before any
        effect, and the caller runs the general path on the frame, which reads the 0."""
        if len(path) < 2 or path[-1] in (VALID, NEXT, TOUCHED):
            return False
        if path[-1] == "$start" or path in self.ctx.split_bytes:  # only ever set by the extract
            return True
        return path[:-1] + (VALID,) in self.ctx.names or path[:-1] in self.ctx.always_valid

    def in_stack_element(self, path: tuple[str, ...]) -> bool:
        return any(path[:k] in self.ctx.stacks and path[k].isdigit()
                   for k in range(1, len(path)))

    def local(self, path: tuple[str, ...], default: str = "0") -> str:
        name = self.ctx.names.get(path)
        if name is None:
            base = "f_" + "__".join(re.sub(r"\W", "_", p) for p in path)
            name, k = base, 1
            while name in self.ctx.defaults:
                k += 1
                name = f"{base}_{k}"
            self.ctx.names[path] = name
            self.ctx.defaults[name] = default
        return name

    def field_local(self, path: tuple[str, ...], t: Type) -> str:
        return self.local(path, "False" if isinstance(t, BoolT) else self.ctx.zero(t, self.ctx.last_loc))  # type: ignore[arg-type]  # last_loc is set by the first statement compiled

    def valid_local(self, path: tuple[str, ...]) -> str:
        if path in self.ctx.always_valid:
            return "True"
        return self.local(path + (VALID,), "False")

    def raw_local(self, path: tuple[str, ...]) -> str:
        return self.local(path + (RAW,), "0")

    def sm_width(self, name: str) -> int:
        """The width of standard_metadata field ``name`` (64 when it is not a bit<W>)."""
        t = self.ctx.type_names.get("standard_metadata_t")
        ft = t.field_type(name) if isinstance(t, StructT) else None
        return ft.width if isinstance(ft, BitT) and not ft.signed else 64

    def sm_local(self, name: str) -> str:
        return self.local(("sm", name))

    def path_value(self, path: tuple[str, ...], t: Type, sym: Sym | None = None,
                   parent: StructT | None = None) -> V:
        if isinstance(t, StructT):
            if t.kind == "header_union":
                raise NoFast("header union")
            return V("$" + ".".join(path) + "$", t, None, sym, path)  # never valid Python
        if isinstance(t, StackT):
            if t.elem.kind != "header":
                raise NoFast("stack of unions")
            return V("$" + ".".join(path) + "$", t, None, sym, path)
        v = self.ctx._leaf_cache.get(path)
        if v is None:
            v = self.ctx._leaf_cache[path] = self.leaf_value(path, t, parent)
            if parent is not None and parent.kind == "header":
                self.ctx.leaf_parent[path] = parent
        return v if sym is None else V(v.code, t, v.const, sym, path)

    def leaf_value(self, path: tuple[str, ...], t: Type, parent: StructT | None) -> V:
        """The code that reads a field (always the same for one place)."""
        sym = None
        if path in (("sm", "parser_error"), ("sm", "instance_type")) and not self.ctx.maybe_written(path):
            # a parser error leaves the fast path; only the general path recirculates
            return V("0", t, 0, sym, path)
        if path in (("sm", "enq_qdepth"), ("sm", "deq_qdepth"), ("sm", "deq_timedelta")) \
                and not self.ctx.maybe_written(path):
            return V("0", t, 0, sym, path)  # 0 in ingress, and 0 as the direct path sets it
        if path in GIVEN and not self.ctx.maybe_written(path):  # the caller's value, as it is
            if path in _CLOCK:
                self.ctx.uses_clock_given = True
            return V(GIVEN[path], t, None, sym, path)
        if parent is not None and parent.kind == "header" and not self.ctx.maybe_written(path):
            # nothing assigns it: read it from the header's bits where it is used
            self.ctx.lazy.add(path)
            widths = [1 if isinstance(ft, BoolT) else ft.width for _, ft in parent.fields]  # type: ignore[attr-defined]  # a header's fields are bit<W>, int<W> or bool
            i = [n for n, _ in parent.fields].index(path[-1])
            after = sum(widths[i + 1:])
            if self.ctx.bytes_backed(path[:-1]):
                if path in self.ctx.split_bytes:  # read at several places: a local, set at the extract
                    return V(self.field_local(path, t), t, None, sym, path)
                return V(self.bytes_field(path, t, parent, self.start_local(path[:-1])), t, None, sym, path)
            raw = self.raw_local(path[:-1])
            shifted = f"({raw} >> {after})" if after else raw
            return V(f"({self.ctx.field_from(shifted, t, widths[i], i != 0)})", t, None, sym, path)
        if parent is not None and parent.kind == "header":
            self.ctx.field_header[path] = path[:-1]
        return V(self.field_local(path, t), t, None, sym, path)

    def bytes_field(self, path: tuple[str, ...], t: Type, parent: StructT, s: str) -> str:
        """Code reading field ``path`` of a header kept as bytes, starting at ``s``."""
        widths = [1 if isinstance(ft, BoolT) else ft.width for _, ft in parent.fields]  # type: ignore[attr-defined]  # a header's fields are bit<W>, int<W> or bool
        i = [n for n, _ in parent.fields].index(path[-1])
        o, w = sum(widths[:i]), widths[i]
        a, b = o // 8, (o + w + 7) // 8
        if w in (8, 16) and o % 8 == 0:  # indexing: no slice object
            x = f"data[{s} + {a}]" if a else f"data[{s}]"
            if w == 16:
                x = f"({x} << 8 | data[{s} + {a + 1}])"
            return x if not isinstance(t, BoolT) and not (isinstance(t, BitT) and t.signed) \
                else f"({self.ctx.field_from(x, t, w, False)})"
        x = f"int.from_bytes(data[{s} + {a}:{s} + {b}], 'big')" if a else \
            f"int.from_bytes(data[{s}:{s} + {b}], 'big')"
        sh = b * 8 - o - w
        shifted = f"({x} >> {sh})" if sh else x
        return f"({self.ctx.field_from(shifted, t, w, w != (b - a) * 8)})"

    # ---- places of the packet state (emit_expr.PlaceWriter) -------------------------------
    def name(self, node: ir.Ref) -> V:
        if node.sym.kind == "var" and node.sym.code in self.ctx.param_targets:
            return self.path_value((self.ctx.param_targets[node.sym.code],), node.type, node.sym)
        return self.general.name(node)

    def field(self, node: ir.Field, base: V) -> V:
        if base.path is not None:
            return self.path_value(base.path + (node.name,), node.type, parent=node.parent)
        return self.general.field(node, base)

    def stack_member(self, node: ir.StackMember, base: V) -> V:
        if base.path is not None:
            raise NoFast(f"stack member {node.name} outside extract")
        return self.general.stack_member(node, base)

    def stack_element(self, node: ir.StackIndex, base: V, idx: V) -> V:
        if base.path is not None:
            if idx.const is None:
                raise NoFast("stack index known only at run time")
            i = int(idx.const)
            if 0 <= i < node.stack.size:
                self.ctx.touch_stack(base.path, node.stack)
                return self.path_value(base.path + (str(i),), node.type)
        return self.general.stack_element(node, base, idx)

    @staticmethod
    def table_result(code: str) -> tuple[str, str]:
        return f"{code}_h", f"{code}_i"  # the locals the table's application set

    def convert(self, v: V, t: Type, how: str) -> str:
        if v.path is not None and isinstance(t, (StructT, StackT)) and (v.type is t or v.type == t):
            # a header/struct of the packet state used as a value: an object like the
            # general path's (for a local variable, an argument, ...)
            obj = self.ctx.tmp("obj")
            self.load_object(obj, v.path, t)
            return obj
        return self.general.convert(v, t, how)

    def load_object(self, code: str, path: tuple[str, ...], t: Type) -> None:
        """Statements making ``code`` an object holding the place ``path``."""
        if isinstance(t, StructT) and t.kind in ("header", "struct"):
            self.ctx.emit(f"{code} = {t.pyname}()")
            for n, ft in t.fields:
                if isinstance(ft, (StructT, StackT)):
                    self.load_object(f"{code}.{pyfield(n)}", path + (n,), ft)
                else:
                    self.ctx.emit(f"{code}.{pyfield(n)} = {self.path_value(path + (n,), ft, parent=t).code}")
            if t.kind == "header":
                self.ctx.emit(f"{code}._v = {self.valid_local(path)}")
        elif isinstance(t, StackT):
            self.ctx.touch_stack(path, t)
            self.ctx.emit(f"{code} = Stack({t.elem.pyname}, {t.size})")
            for i in range(t.size):
                self.load_object(f"{code}.h[{i}]", path + (str(i),), t.elem)
            self.ctx.emit(f"{code}.nxt = {self.local(path + (NEXT,))}")
        else:
            raise NoFast("header union as a value")

    def composite_eq(self, a: str, b: str, t: StructT | StackT) -> str:
        raise NoFast("== on headers, unions, stacks or structs")  # general path only

    # ---- field lists (the deferred nodes read where each part came from) ----------------
    def bits_part(self, v: V, parts: list[tuple[str, int | str]]) -> None:
        if v.path is not None and len(parts) == 1:  # a field of the packet state
            self.ctx.part_place[parts[0][0]] = v.path
