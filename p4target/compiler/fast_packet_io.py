"""The fast compiler's packet_in and packet_out methods (``FastPacketIO``, the
``PacketIO`` of ``FastCompiler``, ``fast_compiler``): extracts are ``FastParser``'s
(``fast_parser``), which settles the parse position before the general advance and
lookahead; an emit appends the header's bytes to ``_o`` as they came when the frame
still holds them, else through an ``Emit`` node (``fast_deferred``); a lookahead of
a struct and ``extract<T>(_)`` are the general path's alone.
"""

from __future__ import annotations

from p4target.compiler import ir
from p4target.compiler.context import FastContext
from p4target.compiler.fast_deferred import TAIL, TOUCHED, Emit
from p4target.compiler.fast_errors import NoFast
from p4target.compiler.fast_parser import FastParser
from p4target.compiler.packet_io import PacketIO
from p4target.compiler.types import StackT, StructT
from p4target.compiler.values import V
from p4target.frontend.source import Loc


class FastPacketIO(PacketIO):
    """``PacketIO`` for the fast compiler ``ctx``; ``parser`` compiles its extracts."""

    ctx: FastContext

    def __init__(self, ctx: FastContext, parser: FastParser) -> None:
        super().__init__(ctx)
        self.parser = parser

    def write(self, node: ir.Call) -> V | None:
        if isinstance(node, ir.Advance):
            self.parser.before_packet_in_method("advance")
        elif isinstance(node, ir.Lookahead):
            self.parser.before_packet_in_method("lookahead")
        return super().write(node)

    def extract(self, node: ir.Extract) -> None:
        self.parser.extract(node)

    def unpack_struct(self, t: StructT, x: str) -> str:
        raise NoFast("lookahead of a struct")

    def skip_header(self, node: ir.SkipHeader) -> None:
        raise NoFast("extract<T>(_)")

    def emit_header(self, v: V, loc: Loc) -> None:
        t = v.type
        if v.path is None:
            raise NoFast("emit of a local")
        tail = self.ctx.frame_tail()
        if tail is not None and v.path in tail[0]:
            if v.path == tail[0][0] and not tail[2]:  # the run's bytes, as they came
                tl = self.ctx.local(TAIL, "None")
                self.ctx.emit(f"if {tl} is not None:")
                self.ctx.emit(f"    _o.append(data[{tl}:pos])")
            return  # (a run that ends the deparser goes with the payload)
        if isinstance(t, StructT) and t.kind == "header" and self.ctx.bytes_backed(v.path):
            s = self.ctx.start_local(v.path)
            valid = self.ctx.valid_local(v.path)
            if valid == "True":
                self.ctx.emit(f"_o.append(data[{s}:{s} + {t.width // 8}])")
            else:
                self.ctx.emit(f"if {valid}:")
                self.ctx.emit(f"    _o.append(data[{s}:{s} + {t.width // 8}])")
        elif isinstance(t, StructT) and t.kind == "header":
            self.ctx.raw_local(v.path)
            self.ctx.valid_local(v.path)
            self.ctx.out.append(Emit(self.ctx.ind, v.path, t))
        elif isinstance(t, StructT) and t.kind == "struct":
            for n, ft in t.fields:
                self.emit_header(self.ctx.path_value(v.path + (n,), ft), loc)
        elif isinstance(t, StackT):
            self.ctx.stacks[v.path] = t
            self.ctx.emit(f"if {self.ctx.local(v.path + (TOUCHED,), 'False')}:")
            self.ctx.indent()
            for i in range(t.size):
                self.emit_header(self.ctx.path_value(v.path + (str(i),), t.elem), loc)
            self.ctx.dedent()
        else:
            raise NoFast("emit of a union")
