"""Assembly of the generated Python module: header/struct classes, PacketState,
the Pipeline class with the contract's methods, and Pipeline.preserve's field lists."""

from __future__ import annotations

import re

from p4target.compiler.context import CompilerContext
from p4target.compiler.naming import pyfield
from p4target.frontend.source import NOWHERE
from p4target.compiler.types import BoolT, StackT, StructT, TupleT, VarbitT

# A parser that loops without consuming input would hang the switch; after this many
# state transitions parsing stops with error.ParserTimeout.
PARSER_STEP_LIMIT = 4096


# Limits of the straight-line parser (an acyclic parser inlined into Pipeline.parse):
# beyond them (deep or wide state graphs) the state-function loop is kept.
# (INLINE_PARSER False keeps the loop for every parser: the tests compare the two.)
INLINE_PARSER = True
INLINE_PARSER_MAX_LINES = 3000
INLINE_PARSER_MAX_DEPTH = 40

_CASE = re.compile(r"^        if (.*): return (\w+), pos$")
_GOTO = re.compile(r"^        return (\w+), pos$")
_FAIL = re.compile(r"^        raise ParserError\(\d+, pos\)$")


class ModuleAssembler:
    """The text of the generated module, from what the program compiler ``ctx``
    generated (its classes, parser states, build lines, controls)."""

    def __init__(self, ctx: CompilerContext) -> None:
        self.ctx = ctx

    def inline_parser(self) -> list[str] | None:
        """The parser as straight-line code for Pipeline.parse (16-space indent), when
        its state graph is acyclic and every state function has the shape gen_state
        gives it (body, then ``if C: return S, pos`` cases, then ``return S, pos`` or
        ``raise ParserError(N, pos)``); None otherwise. Each state's body is kept as
        generated; the transitions become if/elif/else blocks nesting the next state
        (a state reached on several paths is repeated), accept/reject fall through
        to the end of the parse, as the loop does when a state returns None."""
        by_func = {f: n for n, f in self.ctx.state_funcs.items()}
        states: dict[str, _State] = {}
        for name, lines in self.ctx.state_lines.items():
            shape = _state_shape(lines)
            if shape is None:
                return None
            states[self.ctx.state_funcs[name]] = shape
        graph = _StateGraph(states)
        if any(t not in by_func for f in states for t in graph.targets(f)):
            return None
        if graph.cyclic(self.ctx.parser_start, 0):  # acyclic? (depth-first search from the start state)
            return None
        try:
            graph.emit(self.ctx.parser_start, " " * 16)
        except OverflowError:
            return None
        out = graph.out
        if not out:  # every state on the way to accept is empty: nothing to do
            out.append(" " * 16 + "pass")
        if len(out) > INLINE_PARSER_MAX_LINES:
            return None
        return out

    def struct_class(self, t: StructT) -> list[str]:
        slots = []
        init = []
        copy = []
        for n, ft in t.fields:
            f = pyfield(n)
            slots.append(f)
            if isinstance(ft, StructT):
                init.append(f"self.{f} = {ft.pyname}()")
                copy.append(f"o.{f} = self.{f}.copy()")
            elif isinstance(ft, StackT):
                init.append(f"self.{f} = Stack({ft.elem.pyname}, {ft.size})")
                copy.append(f"o.{f} = self.{f}.copy()")
            elif isinstance(ft, TupleT):  # its headers, structs and stacks are copied too
                init.append(f"self.{f} = {self.ctx.zero(ft, NOWHERE)}")
                copy.append(f"o.{f} = (" + "".join(f"self.{f}[{i}]" + (".copy()" if isinstance(et, (StructT, StackT))
                                                                        else "") + ", "
                                                    for i, et in enumerate(ft.elems)) + ")")
            else:
                init.append(f"self.{f} = {'False' if isinstance(ft, BoolT) else '0'}")
                copy.append(f"o.{f} = self.{f}")
            if isinstance(ft, VarbitT):
                slots.append(f"_len_{n}")
                init.append(f"self._len_{n} = 0")
                copy.append(f"o._len_{n} = self._len_{n}")
        if t.kind == "header":
            slots.append("_v")
            init.append("self._v = False")
            copy.append("o._v = self._v")
        lines = [f"class {t.pyname}:", f'    """{t.kind} {t.name}"""',
                 f"    __slots__ = ({''.join(repr(s) + ', ' for s in slots)})", "",
                 "    def __init__(self):"]
        lines += ["        " + x for x in init] or ["        pass"]
        lines += ["", "    def copy(self):", f"        o = {t.pyname}.__new__({t.pyname})"]
        lines += ["        " + x for x in copy]
        lines += ["        return o"]
        if t.kind == "header":
            lines += ["", "    def set_valid(self):", "        if not self._v:"]
            lines += ["            " + x for x in init]
            lines += ["            self._v = True"]
        if t.kind == "header" and not any(isinstance(ft, VarbitT) for _, ft in t.fields):
            lines += ["", "    @staticmethod", "    def unpack(x):", f"        o = {t.pyname}()"]
            lines += ["        " + x for x in self.ctx.unpack_lines(t, "o", "x")]
            lines += ["        o._v = True", "        return o"]
        args = [f"a{i}" for i in range(len(t.fields))]
        lines += ["", "", f"def mk_{t.pyname}({', '.join(args)}):",
                  f"    o = {t.pyname}.__new__({t.pyname})"]
        for (n, ft), a in zip(t.fields, args, strict=False):
            lines.append(f"    o.{pyfield(n)} = {a}")
            if isinstance(ft, VarbitT):
                lines.append(f"    o._len_{n} = 0")
        if t.kind == "header":
            lines.append("    o._v = True")
        lines += ["    return o", "", ""]
        return lines

    def field_lists(self) -> dict[int, list[str]]:
        """@field_list(N) metadata fields -> copy statements for Pipeline.preserve."""
        lists: dict[int, list[str]] = {}

        def walk(t: StructT, path: str) -> None:
            for n, ft in t.fields:
                p = f"{path}.{pyfield(n)}"
                fl = t.field_annotations.get(n, {}).get("field_list")
                if fl:
                    for idx in fl:
                        if isinstance(idx, int):
                            val = f"{{}}{p}.copy()" if isinstance(ft, (StructT, StackT)) else f"{{}}{p}"
                            lists.setdefault(idx, []).append(f"dst{p} = " + val.format("src"))
                elif isinstance(ft, StructT) and ft.kind == "struct":
                    walk(ft, p)

        walk(self.ctx.meta_t, ".meta")  # type: ignore[arg-type]  # meta is a struct (checked when the parser is declared)
        return lists

    def assemble(self) -> str:
        L: list[str] = [
            f"# Generated by p4target.compiler from {self.ctx.source}. Do not edit.",
            "from p4target.compiler.support import ParserError, Stack, EXIT, ExitControl, div, mod, "
            "shl, lookahead",
            "", "",
        ]
        for t in self.ctx.struct_types:
            L += self.struct_class(t)
        L += self.ctx.module_lines
        sm_t, hdr_t, meta_t = self.ctx.sm_t, self.ctx.hdr_t, self.ctx.meta_t
        L += [
            "class PacketState:",
            '    """One packet in flight: headers, metadata, standard metadata, payload, requests."""',
            "    __slots__ = ('hdr', 'meta', 'sm', 'payload', 'truncate_to', 'drop_reason', 'resubmit',",
            "                 'recirculate', 'clones', 'digests')",
            "",
            "    def __init__(self):",
            f"        self.hdr = {hdr_t.pyname}()",  # type: ignore[attr-defined]  # the parser's hdr and meta parameters are structs (checked when declared)
            f"        self.meta = {meta_t.pyname}()",  # type: ignore[attr-defined]  # as hdr
            f"        self.sm = {sm_t.pyname}()",  # type: ignore[union-attr]  # standard_metadata_t is declared by v1model.p4
            "        self.payload = b''",
            "        self.truncate_to = None",
            "        self.drop_reason = None",
            "        self.resubmit = None",
            "        self.recirculate = None",
            "        self.clones = []",
            "        self.digests = []",
            "", "",
            f"ERRORS = {self.ctx.errors_by_name!r}",
            "", "",
            "def build(rt):",
            '    """Bind the runtime once, define every block as a closure, return the Pipeline."""',
            "    rt_mark_to_drop = rt.mark_to_drop",
            "    rt_hash = rt.hash",
            "    rt_checksum = rt.checksum",
            "    rt_random = rt.random",
            "    rt_clone = rt.clone",
            "    rt_resubmit = rt.resubmit",
            "    rt_recirculate = rt.recirculate",
            "    rt_truncate = rt.truncate",
            "    rt_digest = rt.digest",
            "    rt_log_msg = rt.log_msg",
            "    rt_assert = rt.assert_",
        ]
        L += ["    " + b for b in self.ctx.bind_lines]
        L += [""]
        L += self.ctx.build_lines
        c = self.ctx.control_funcs
        plocals = f"{self.ctx.parser_locals}()" if self.ctx.parser_locals else "None"
        fl = self.field_lists()
        L += [
            "    class Pipeline:",
            "        errors = ERRORS",
            "        State = PacketState",
            "",
        ]
        L += [
            "        def parse(self, data, ingress_port, instance_type=0, packet_length=None):",
            "            st = PacketState()",
            "            sm = st.sm",
            "            sm.ingress_port = ingress_port",
            "            sm.instance_type = instance_type",
            "            sm.packet_length = len(data) if packet_length is None else packet_length",
            f"            L = {plocals}",
            "            pos = 0",
            "            try:",
        ]
        straight = self.inline_parser() if INLINE_PARSER else None
        if straight is not None:
            L += straight
        else:
            L += [
                f"                state = {self.ctx.parser_start}",
                "                steps = 0",
                "                while state is not None:",
                "                    state, pos = state(st, L, data, pos)",
                "                    steps += 1",
                f"                    if steps > {PARSER_STEP_LIMIT}:",
                f"                        raise ParserError({self.ctx.errors_by_name['ParserTimeout']}, pos)",
            ]
        L += [
            "            except ParserError as e:",
            "                sm.parser_error = e.code",
            "                pos = e.pos",
            "            st.payload = data[pos:]",
            "            return st",
            "",
        ]
        # A control whose code cannot raise EXIT (no exit statement anywhere in the
        # program) is bound as the method itself: one call less per block. A control
        # with an empty apply and nothing to initialise is a no-op method.
        can_exit = any("raise EXIT" in line for line in self.ctx.build_lines)
        for role, meth in (("verify", "verify_checksum"), ("ingress", "ingress"), ("egress", "egress"),
                           ("compute", "compute_checksum")):
            if c[role] in self.ctx.empty_controls:
                L += [f"        def {meth}(self, st):", "            pass", "",
                      f"        {meth}_is_noop = True", ""]
            elif not can_exit:
                L += [f"        {meth} = staticmethod({c[role]})", ""]
            else:
                L += [f"        def {meth}(self, st):",
                      "            try:",
                      f"                {c[role]}(st)",
                      "            except ExitControl:",
                      "                pass",
                      ""]
        L += [
            "        def deparse(self, st):",
            "            out = []",
            "            try:",
            f"                {c['deparser']}(st, out.append)",
            "            except ExitControl:",
            "                pass",
            "            out.append(st.payload)",
            "            return b''.join(out)",
            "",
            "        def copy_state(self, st):",
            "            n = PacketState.__new__(PacketState)",
            "            n.hdr = st.hdr.copy()",
            "            n.meta = st.meta.copy()",
            "            n.sm = st.sm.copy()",
            "            n.payload = st.payload",
            "            n.truncate_to = st.truncate_to",
            "            n.drop_reason = st.drop_reason",
            "            n.resubmit = st.resubmit",
            "            n.recirculate = st.recirculate",
            "            n.clones = list(st.clones)",
            "            n.digests = list(st.digests)",
            "            return n",
            "",
            "        def reset_standard_metadata(self, st):",
            f"            st.sm = {sm_t.pyname}()",  # type: ignore[union-attr]  # as above
            "",
            "        def new_state(self):",
            "            return PacketState()",
            "",
            "        def preserve(self, src, dst, field_list):",
        ]
        if not fl:
            L.append("            return None")
        first = True
        for idx, stmts in sorted(fl.items()):
            L.append(f"            {'if' if first else 'elif'} field_list == {idx}:")
            first = False
            L += ["                " + s for s in stmts]
        L += ["", "    return Pipeline()", ""]
        return "\n".join(L)


_State = tuple[list[str], list[tuple[str, str]], str]  # body lines, (condition, target) cases, final line


def _state_shape(lines: list[str]) -> _State | None:
    """A state function as gen_state writes it, taken apart; None for another shape."""
    if len(lines) < 3 or not lines[0].startswith("    def ") or not lines[1].startswith('        """'):
        return None
    body = [x for x in lines[2:] if x.strip()]
    if not body:
        return None
    final = body.pop()
    if not (_GOTO.match(final) or _FAIL.match(final)):
        return None
    cases: list[tuple[str, str]] = []
    while body and _CASE.match(body[-1]):
        m = _CASE.match(body.pop())
        cases.insert(0, (m.group(1), m.group(2)))  # type: ignore[union-attr]  # _CASE matched this line just above
    for x in body:
        if not x.startswith("        ") or "return" in x or '"""' in x or x.rstrip().endswith("\\"):
            return None
    return body, cases, final


class _StateGraph:
    """The parser's states by function name: their successors, whether a loop is
    reachable, and the straight-line code (``out``) that ``emit`` writes."""

    def __init__(self, states: dict[str, _State]) -> None:
        self.states = states
        self.color: dict[str, int] = {}
        self.out: list[str] = []

    def targets(self, f: str) -> list[str]:
        _, cases, final = self.states[f]
        out = [t for _, t in cases]
        m = _GOTO.match(final)
        if m:
            out.append(m.group(1))
        return [t for t in out if t != "None"]

    def cyclic(self, f: str, depth: int) -> bool:
        if depth > INLINE_PARSER_MAX_DEPTH:
            return True
        self.color[f] = 1
        for t in self.targets(f):
            c = self.color.get(t, 0)
            if c == 1 or (c == 0 and self.cyclic(t, depth + 1)):
                return True
        self.color[f] = 2
        return False

    def emit(self, f: str, ind: str) -> None:
        body, cases, final = self.states[f]
        out = self.out
        out.extend(ind + x[8:] for x in body)
        m = _GOTO.match(final)
        if not cases:
            if m is None:
                out.append(ind + final[8:])
            elif m.group(1) != "None":
                self.emit(m.group(1), ind)
            return
        for i, (cond, t) in enumerate(cases):
            out.append(f"{ind}{'if' if i == 0 else 'elif'} {cond}:")
            self.branch(t, ind + "    ")
        out.append(ind + "else:")
        if m is None:
            out.append(ind + "    " + final[8:])
        else:
            self.branch(m.group(1), ind + "    ")
        if len(out) > INLINE_PARSER_MAX_LINES:
            raise OverflowError

    def branch(self, t: str, ind: str) -> None:
        n = len(self.out)
        if t != "None":
            self.emit(t, ind)
        if len(self.out) == n:
            self.out.append(ind + "pass")
