"""The fast path's externs (``FastExterns``, an object ``FastCompiler``
(``fast_compiler``) composes): counter and register updates held back until the packet is sure
to finish here (``CountSite``, ``RegisterAccess``, applied by ``Commit``,
``fast_deferred``), and how each held-back count is kept (``count_mode``); the
hashes of field lists, reading the frame's own bytes where the fields still are
them (``hash_input``); the extern functions, among them those the fast path gives up
at (``_GIVE_UP``, also what ``fast_prune`` prunes before).
"""

from __future__ import annotations

from typing import Any

from p4target.compiler import ir
from p4target.compiler.context import FastContext
from p4target.compiler.extern_calls import ExternCalls
from p4target.compiler.values import V
from p4target.compiler.fast_deferred import DIRTY, DROP_PORT, CountSite, RegisterAccess
from p4target.compiler.fast_hash import hash_bytes
from p4target.compiler.types import BitT, BoolT

# extern functions whose effect the fast path leaves to the general path
_GIVE_UP = {"random", "clone", "clone_preserving_field_list", "resubmit_preserving_field_list",
            "recirculate_preserving_field_list", "truncate", "digest", "log_msg"}
# hash algorithms whose byte function never changes once the switch is built
_FIXED_HASHES = {"crc16", "crc32", "crcCCITT", "identity", "csum16", "xor16"}


class FastExterns(ExternCalls):
    """Extern methods and functions, and hashes, of the fast compiler ``ctx``, emitted
    through it; the counts and register writes it holds back are in its
    ``count_sites``, ``reg_pending``, ...; what it does not override is the general
    ``ExternCalls``'."""

    ctx: FastContext

    def __init__(self, ctx: FastContext) -> None:
        super().__init__(ctx)

    # ---- counters held back (CountSite, Commit) ---------------------------------------
    def single_counted(self) -> list[str]:
        return [x for x in dict.fromkeys(self.ctx.count_sites) if self.ctx.count_sites.count(x) == 1]

    def multi_counted(self) -> list[str]:
        return [x for x in dict.fromkeys(self.ctx.count_sites) if self.ctx.count_sites.count(x) > 1]

    def count_mode(self, x: str) -> str:
        """How counter ``x``'s held-back count is kept: "list" (``_cn``, for one counted
        at several places, and, when that list exists anyway, for one counted at one
        place that not every packet reaches), "always" (one local set by ingress's
        first statements on every packet: no -1 and no test), else "local"."""
        if self.ctx.count_sites.count(x) > 1:
            return "list"
        if x in self.ctx.always_counted:
            return "always"
        if x in self.ctx.top_counted:  # a statement of a block's body: most packets count it
            return "local"
        return "list" if self.multi_counted() else "local"

    @staticmethod
    def count_local(x: str) -> str:
        return f"_cx_{x}"

    def reg_cells(self) -> list[tuple[str, int]]:
        """(register, index) of the cells pending writes are held in locals for."""
        return [(x, i) for x, idx in self.ctx.reg_const.items() if x not in self.ctx.reg_dynamic
                for i in sorted(idx)]

    @staticmethod
    def reg_cell_local(x: str, i: int) -> str:
        return f"_rc_{x}_{i}"

    # ---- hashes of field lists ------------------------------------------------------------
    def hash_call(self, algo: str, data: str, nbits: int, parts: list[tuple[str, int]]) -> str:
        if algo not in _FIXED_HASHES or nbits <= 0:
            return super().hash_call(algo, data, nbits, parts)
        fn = f"_hf_{algo}"
        line = f"{fn} = rt.hashes.function({algo!r})"
        if line not in self.ctx.binds:
            self.ctx.binds.append(line)
        return f"{fn}({self.hash_input(parts)})"

    def hash_input(self, parts: list[tuple[str, int]]) -> str:
        """Code for the bytes a hash of the field list ``parts`` reads: runs of fields
        that are still the frame's bytes (``frame_run``) are slices of the frame
        (nic.p4's flow hash: the IPv6 source and destination, ``data[22:54]`` while
        nothing wrote the IPv6 header), the other fields are packed by ``hash_bytes``."""
        chunks: list[str] = []
        rest: list[tuple[str, int]] = []  # the parts since the last run
        bit = i = 0  # where parts[i] starts in the hashed bit string
        while i < len(parts):
            run = self.frame_run(parts, i) if bit % 8 == 0 else None
            if run is None:
                rest.append(parts[i])
                bit += parts[i][1]
                i += 1
                continue
            j, code = run
            if rest:  # (byte-aligned: the run starts on a byte)
                chunks.append(hash_bytes(rest))
                rest = []
            chunks.append(code)
            bit += sum(w for _, w in parts[i:j])
            i = j
        if rest:
            chunks.append(hash_bytes(rest))
        return " + ".join(chunks)

    def frame_run(self, parts: list[tuple[str, int]], i: int) -> tuple[int, str] | None:
        """(end, code) when ``parts[i:end]`` are consecutive fields of one header, at
        least 32 bits starting and ending on a byte of it, which are the frame's bytes:
        a header kept as bytes (``data[s + a:s + b]``), or one the parser extracts at
        one constant position only, that nothing revalidates or assigns whole (so only
        field stores change it, and they set its dirty flag), while its dirty flag is
        False (``data[a:b] if not dirty else <the fields packed>``; the flag is
        unbound until the extract, so a packet that never had the header still leaves
        the fast path as reading its fields makes it)."""
        place = self.ctx.part_place.get(parts[i][0])
        t = self.ctx.leaf_parent.get(place) if place is not None else None
        if place is None or t is None:
            return None
        h = place[:-1]
        names = [n for n, _ in t.fields]
        widths = [1 if isinstance(ft, BoolT) else ft.width for _, ft in t.fields]  # type: ignore[attr-defined]  # a header's fields are bit<W>, int<W> or bool
        k = names.index(place[-1])
        off = sum(widths[:k])
        if off % 8:
            return None
        best, j, w = None, i, 0
        while j < len(parts) and k < len(names) and self.ctx.part_place.get(parts[j][0]) == h + (names[k],):
            w += widths[k]
            j, k = j + 1, k + 1
            if w % 8 == 0:
                best = (j, w)
        if best is None or best[1] < 32:
            return None
        j, w = best
        a, b = off // 8, (off + w) // 8
        if self.ctx.bytes_backed(h):
            s = self.ctx.start_local(h)
            return j, f"data[{s} + {a}:{s} + {b}]"
        at = self.ctx.extract_at.get(h, set())
        dirty = self.ctx.names.get(h + (DIRTY,))
        p = self.ctx.places
        if len(at) != 1 or None in at or dirty is None or self.ctx.fn_kind == "parser" \
                or any(h[:k] in p.revalidated or h[:k] in p.written for k in range(1, len(h) + 1)):
            return None
        base = next(iter(at))
        return j, f"(data[{base + a}:{base + b}] if not {dirty} else {hash_bytes(parts[i:j])})"  # type: ignore[operator]  # base is set for a hash over frame bytes (the branch above)

    # ---- externs -------------------------------------------------------------------------
    def extern_method(self, node: ir.ExternCall) -> V | None:
        kind = node.instance.kind  # type: ignore[union-attr]  # a method has its instance
        if kind == "counter":
            return self.counter_count(node)
        if kind == "register":
            return self.register_access(node)
        if kind == "direct_counter":
            return None  # the table counts the entry (DirectCounter.count does nothing)
        self.ctx.emit("return None")  # meters, direct meters
        return None

    def counter_count(self, node: ir.ExternCall) -> V | None:
        """``c.count(i)``: a count site the deferred writer settles (fast_deferred.py)."""
        x = node.code
        self.ctx.count_sites.append(x)
        if self.ctx.fn_kind == "parser":  # a parser loop may count it again
            self.ctx.count_sites.append(x)
        for line in (f"{x}_p = {x}.packets", f"{x}_b = {x}.bytes"):
            if line not in self.ctx.binds:
                self.ctx.binds.append(line)
        size = node.instance.extern.size  # type: ignore[union-attr]  # a counter has its model
        iv = self.ctx.emit_expr(node.args[0])  # type: ignore[arg-type]  # its index
        first = id(node.call) in self.ctx.ingress_prefix_counts  # (ingress: before any drop commits)
        if self.ctx.ind == self.ctx.body_ind:
            self.ctx.top_counted.add(x)
        if iv.const is not None:  # the index is known here: so is whether it counts
            if 0 <= int(iv.const) < size:
                self.ctx.out.append(CountSite(self.ctx.ind, x, str(iv.const)))
                if first:
                    self.ctx.always_counted.add(x)
            return None
        code = self.code(node.args[0])
        if code.isdigit():  # a constant action argument pasted in (inline_action)
            if int(code) < size:
                self.ctx.out.append(CountSite(self.ctx.ind, x, code))
            return None
        top = self.max_value(node.args[0])  # type: ignore[arg-type]  # as above
        if top is not None and top < size:  # its type says it is in range
            self.ctx.out.append(CountSite(self.ctx.ind, x, code))
            if first:
                self.ctx.always_counted.add(x)
            return None
        i = self.ctx.tmp("ci")
        self.ctx.emit(f"{i} = {code}")
        check = f"{i} < {size}" if isinstance(iv.type, BitT) and not iv.type.signed else f"0 <= {i} < {size}"
        self.ctx.emit(f"if {check}:")
        self.ctx.out.append(CountSite(self.ctx.ind + "    ", x, i))
        return None

    def register_access(self, node: ir.ExternCall) -> V | None:
        """``r.read(out, i)`` / ``r.write(i, v)``: a constant cell kept in a local until the
        frame ends, another one through the pending writes of the frame."""
        inst, x, name, args = node.instance, node.code, node.name, node.args
        nargs = len(node.call.args)
        et: Any = inst.elem_type  # type: ignore[union-attr]  # a register has its instance (a bit<W> cell)
        pend = self.ctx.reg_pending.setdefault(x, f"_reg_{x}")
        line = f"{x}_c = {x}.cells"
        if line not in self.ctx.binds:
            self.ctx.binds.append(line)
        at = 0 if name == "write" or nargs == 1 else 1
        riv = self.ctx.emit_expr(args[at]) if nargs > at else None  # type: ignore[arg-type]  # the index
        if riv is not None and riv.const is not None and nargs == 2:
            cell = int(riv.const)
            inside = 0 <= cell < inst.extern.size  # type: ignore[union-attr]  # as above
            if inside:
                self.ctx.reg_const.setdefault(x, set()).add(cell)
            if name == "write":
                val = self.code(args[1])
                if inside:  # (outside: a write that does nothing)
                    self.ctx.out.append(RegisterAccess(self.ctx.ind, x, cell, et.mask, value=val))
                return None
            tmp = self.ctx.tmp("rv")
            if inside:
                self.ctx.out.append(RegisterAccess(self.ctx.ind, x, cell, et.mask, tmp=tmp))
            else:
                self.ctx.emit(f"{tmp} = 0")
            below = et.mask + 1 if isinstance(et, BitT) and not et.signed else None
            self.out_assign(node, tmp, below)  # a cell fits its type
            return None
        self.ctx.reg_dynamic.add(x)
        ix = self.ctx.tmp("ix")
        if name == "write":
            self.ctx.emit(f"{ix} = {self.code(args[0])}")
            val = self.code(args[1])
            self.ctx.emit(f"if 0 <= {ix} < {x}.size:")
            self.ctx.emit(f"    if {pend} is None: {pend} = {{}}")
            self.ctx.emit(f"    {pend}[{ix}] = ({val}) & {et.mask:#x}")
            return None
        self.ctx.emit(f"{ix} = {self.code(args[0 if nargs == 1 else 1])}")
        code = f"({pend}[{ix}] if {pend} is not None and {ix} in {pend} else {x}.read(None, {ix}))"
        if nargs == 1:
            return V(code, et)
        self.out_assign(node, code)
        return None

    def max_value(self, node: ir.Expr) -> int | None:
        """The largest value ``node`` can have by its type (None: not an unsigned bit
        string): a cast of a narrower unsigned value keeps the narrower bound, so
        ``(bit<32>)standard_metadata.ingress_port`` is at most 511."""
        t = node.type
        if not isinstance(t, BitT) or t.signed:
            return None
        top = (1 << t.width) - 1
        if isinstance(node, ir.Cast):
            inner = self.max_value(node.operand)
            if inner is not None:
                top = min(top, inner)
        return top

    def extern_function(self, node: ir.ExternCall) -> V | None:
        name = node.name
        if name in _GIVE_UP:
            self.ctx.emit("return None")
            return None
        if name == "mark_to_drop":
            self.code(node.args[0])
            self.ctx.emit(self.ctx.sm_store("egress_spec", str(DROP_PORT)))
            self.ctx.emit(self.ctx.sm_store("mcast_grp", "0"))
            return None
        if name in ("assert", "assume"):
            self.ctx.emit(f"if not {self.code(node.args[0])}: return None")
            return None
        if name == "verify":
            # a parser error is the general path's to record (parser_error, the error's
            # position): the fast path gives the frame up, before any side effect
            self.ctx.emit(f"if not {self.code(node.args[0])}: return None")
            return None
        return super().extern_function(node)

    def payload_code(self) -> str:
        return "data[pos:]"
