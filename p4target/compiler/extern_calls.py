"""Code generation of calls of v1model/core extern functions and extern object
methods, from their typed calls (``ir.ExternCall``, checked by
typecheck_extern.py), lowered to direct calls of the runtime ``Bindings``
(docs/target-internals.md, section 2)."""

from __future__ import annotations

from p4target.compiler import ir
from p4target.compiler.context import CompilerContext
from p4target.compiler.values import V
from p4target.compiler.naming import pyfield
from p4target.compiler.types import BitT, BoolT, EnumT, StructT, VoidT

# v1model CloneType members -> the Bindings.clone kind codes (I2E=1, E2E=2)
_CLONE_KIND = {"I2E": 1, "E2E": 2}


class ExternCalls:
    """The code of the extern function calls and extern object method calls of the
    program compiler ``ctx``, emitted through it. ``FastExterns`` (fast_externs.py)
    is the fast compiler's."""

    def __init__(self, ctx: CompilerContext) -> None:
        self.ctx = ctx

    def code(self, node: ir.Expr | None) -> str:
        return self.ctx.emit_expr(node).code  # type: ignore[arg-type]  # the callers read the arguments the checker set

    def write(self, node: ir.ExternCall) -> V | None:
        if node.instance is not None:
            return self.extern_method(node)
        return self.extern_function(node)

    # ------------------------------------------------------------------ externs
    def extern_method(self, node: ir.ExternCall) -> V | None:
        kind, name, x, args = node.instance.kind, node.name, node.code, node.args  # type: ignore[union-attr]  # a method has its instance
        if kind == "counter":
            return V(f"{x}.count(st, {self.code(args[0])})", VoidT())
        if kind == "direct_counter":
            return V(f"{x}.count(st)", VoidT())
        if kind == "register" and name == "read":
            if len(args) == 1:
                return V(f"{x}.read(st, {self.code(args[0])})", node.type)
            self.out_assign(node, f"{x}.read(st, {self.code(args[1])})")
            return None
        if kind == "register":
            val = self.code(args[1])
            return V(f"{x}.write(st, {self.code(args[0])}, {val})", VoidT())
        if kind == "meter":
            self.out_assign(node, f"{x}.execute_meter(st, {self.code(args[0])})")
            return None
        self.out_assign(node, f"{x}.read(st)")  # a direct meter
        return None

    def out_assign(self, node: ir.ExternCall, code: str, below: int | None = None) -> None:
        """Store an extern's result (an unbounded int, or one known to be ``< below``)
        into the call's out argument, of any width."""
        tt = node.out_type
        if isinstance(tt, BitT) and not tt.signed and below is not None and below <= tt.mask + 1:
            pass  # it fits: nothing to mask off
        elif isinstance(tt, BitT):
            code = f"({code}) & {tt.mask:#x}" if not tt.signed else \
                f"((({code}) & {tt.mask:#x} ^ {1 << (tt.width - 1)}) - {1 << (tt.width - 1)})"
        elif isinstance(tt, EnumT) and tt.underlying is not None:
            code = f"({code}) & {tt.underlying.mask:#x}"
        self.ctx.store_node(node.out, code)  # type: ignore[arg-type]  # the externs with a result have their place

    def extern_function(self, node: ir.ExternCall) -> V | None:
        name = node.name
        if name.endswith("checksum") or name.endswith("checksum_with_payload"):
            return self._checksum(node, name.startswith("verify"), name.endswith("payload"))
        handler = getattr(self, "_x_" + name)
        return handler(node)

    def _x_verify(self, node: ir.ExternCall) -> V | None:
        c = self.code(node.args[0])
        self.ctx.emit(f"if not {c}: raise ParserError({self.code(node.args[1])}, pos)")
        return None

    def _x_mark_to_drop(self, node: ir.ExternCall) -> V | None:
        self.code(node.args[0])
        return V("rt_mark_to_drop(st)", VoidT())

    def _x_hash(self, node: ir.ExternCall) -> V | None:
        data, nbits, parts = self.ctx.emit_bits(node.bits)  # type: ignore[arg-type]  # a hash has its data
        base = self.ctx.emit_expr(node.args[2])  # type: ignore[arg-type]  # as above: its base and max
        mx = self.ctx.emit_expr(node.args[4])  # type: ignore[arg-type]
        h = self.hash_call(node.member, data, nbits, parts)  # type: ignore[arg-type]  # nbits and the parts' widths are ints once flattened from bit<W> values
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
        self.out_assign(node, code, below)
        return None

    @staticmethod
    def _x_static_assert(node: ir.ExternCall) -> V | None:
        return V("True", BoolT(), True)  # the checker checked it holds

    def _x_random(self, node: ir.ExternCall) -> V | None:
        self.code(node.args[0])
        lo = self.code(node.args[1])
        hi = self.code(node.args[2])
        self.out_assign(node, f"rt_random(st, {lo}, {hi})")
        return None

    def _checksum(self, node: ir.ExternCall, verify: bool, payload: bool) -> V | None:
        cond = self.code(node.args[0])
        data, nbits, _ = self.ctx.emit_bits(node.bits)  # type: ignore[arg-type]  # a checksum has its data
        pl = f", {self.payload_code()}" if payload else ""
        ck = f"rt_checksum({node.member!r}, {data}, {nbits}{pl})"
        self.ctx.emit(f"if {cond}:")
        self.ctx.indent()
        if verify:
            cv = self.ctx.emit_expr(node.args[2])  # type: ignore[arg-type]  # verify reads the checksum field
            assert isinstance(cv.type, BitT)  # the checker's
            self.ctx.emit(f"if ({ck}) & {cv.type.mask:#x} != {cv.code}:")
            self.ctx.emit(f"    {self.ctx.sm_store('checksum_error', '1')}")
        else:
            self.out_assign(node, ck)
        self.ctx.dedent()
        return None

    def _x_clone(self, node: ir.ExternCall) -> V | None:
        kind = _CLONE_KIND[node.member]  # type: ignore[index]  # a clone has its CloneType
        return V(f"rt_clone(st, {kind}, {self.code(node.args[1])}, None)", VoidT())

    def _x_clone_preserving_field_list(self, node: ir.ExternCall) -> V | None:
        kind = _CLONE_KIND[node.member]  # type: ignore[index]  # as above
        sess = self.code(node.args[1])
        return V(f"rt_clone(st, {kind}, {sess}, {node.args[2].const})", VoidT())  # type: ignore[union-attr]  # the field list index is a constant

    def _x_resubmit_preserving_field_list(self, node: ir.ExternCall) -> V | None:
        return V(f"rt_resubmit(st, {node.args[0].const})", VoidT())  # type: ignore[union-attr]  # as above

    def _x_recirculate_preserving_field_list(self, node: ir.ExternCall) -> V | None:
        return V(f"rt_recirculate(st, {node.args[0].const})", VoidT())  # type: ignore[union-attr]  # as above

    def _x_truncate(self, node: ir.ExternCall) -> V | None:
        return V(f"rt_truncate(st, {self.code(node.args[0])})", VoidT())

    def _x_digest(self, node: ir.ExternCall) -> V | None:
        self.code(node.args[0])
        data = node.args[1]
        assert data is not None  # the checker's
        if not isinstance(data.type, StructT):  # digest(r, {a, b}): a tuple
            return V(f"rt_digest(st, {node.digest!r}, {self.code(data)})", VoidT())
        obj = self.code(data)
        o = self.ctx.tmp("d")
        self.ctx.emit(f"{o} = {obj}")
        vals = [f"{o}.{pyfield(n)}" for n, _ in data.type.fields]
        return V(f"rt_digest(st, {data.type.name!r}, ({''.join(v + ', ' for v in vals)}))", VoidT())

    def _x_log_msg(self, node: ir.ExternCall) -> V | None:
        fmt = self.code(node.args[0])
        args = "()"
        if len(node.call.args) == 2:
            args = "(" + "".join(f"int({self.code(a)}), " for a in node.args[1:]) + ")"
        return V(f"rt_log_msg(st, {fmt}, {args})", VoidT())

    def _x_assert(self, node: ir.ExternCall) -> V | None:
        c = self.code(node.args[0])
        return V(f"rt_assert(st, {c}, {str(node.loc)!r})", VoidT())

    _x_assume = _x_assert

    def hash_call(self, algo: str, data: str, nbits: int, parts: list[tuple[str, int]]) -> str:
        """Code for the raw hash of the bit string ``data`` (Bindings.hash); ``parts``
        are its fields (code, width), most significant first."""
        return f"rt_hash({algo!r}, {data}, {nbits})"

    def payload_code(self) -> str:
        """Code for the bytes the parser did not extract."""
        return "st.payload"

