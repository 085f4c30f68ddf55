"""The fused fast path ``fast(data, ingress_port, now_us)``, the code generator's
second output (docs/target-internals.md, "The fast path").

``FastCompiler`` is the program compiler itself (same declarations, scopes, typing,
statements and expressions: one place for the language's semantics) with the
*storage* and *effects* of the generated code changed:

- every header, metadata and standard_metadata field a block parameter reaches is
  a Python local of one function (``f_hdr__ipv6__dst_addr``); a header is also one
  int of its wire bits (``..___raw``), or, when nothing writes it, only where its
  bytes start in the frame; a header stack is its elements plus a ``next`` local.
  No ``PacketState`` is built;
- the parser is straight-line code (each state pasted where the previous state's
  select chooses it, on every path when that stays under ``PASTE_PARSER_MAX``, else
  a state several transitions lead to emitted once), at constant offsets while the
  path's headers are known; a state that selects itself and extracts into
  ``stack.next`` becomes a ``while True:`` loop over locals, bounded by the stack size;
- tables are applied in place: exact, single-LPM, exact+LPM (also with an action
  profile or selector: the entry's live member slots, kept up to date by the
  runtime) and range-less ternary tables are looked up in the generated code in the
  structures ``TableRuntime.fast_lookup`` gives, any other through
  ``T(None, key, sel)``; the chosen action's body is compiled where it runs;
  actions called directly are compiled in place too;
- the deparser emits the headers nothing changes at the end of the frame as the
  frame's own bytes (``frame_tail``);
- counter and direct-counter updates and register writes are held back (in locals
  where a counter is counted at one place or a register's indexes are constants)
  and applied only when the packet finishes here, so nothing has changed anywhere
  when the function gives up (or raises: a header's locals are set only where it
  becomes valid, and reading one of a header that never was is an unbound local);
- anything else with an effect beyond the packet's own fields (meters, clone,
  digest, resubmit, recirculate, truncate, random, log, exit, multicast, an egress
  drop, a parser error) makes it return ``None`` and the caller runs the general
  path on the same frame.

A construct the generator does not handle at all raises ``NoFast`` while compiling:
the program then simply has no fast path. Which fields are split out of a header's
int, and which the deparser puts back, is only known once the whole function is
generated: those places are emitted as ``Deferred`` nodes (``fast_deferred``),
rendered at the end from the recorded uses (never by rewriting generated text).

The generator is split by what it emits, as ``ProgramCompiler`` is: this module
holds ``FastCompiler`` itself (its state, the whole-program analyses such as
``frame_tail``, the controls and the deparser, ``assemble``), which extends
``ProgramCompiler`` and composes ``FastPlaceCode`` (``fast_place_code``:
the packet state's locals and the code reading them, the places its
``ExpressionCompiler`` writes) and ``FastStatementCompiler`` (``fast_statements``,
in place of the general compiler's ``statements``), ``FastTables`` (``fast_tables``: actions and tables in place),
``FastExterns`` (``fast_externs``: externs, held-back counts, hashes; the
``ExternCalls`` it uses) and
``FastParser`` (``fast_parser``) and ``FastPacketIO`` (``fast_packet_io``: the
``PacketIO`` it uses), each given it as a ``FastContext``; the methods
below that only hand a call to one of them are those the other parts
or the deferred nodes call. ``NoFast`` is in ``fast_errors``. The
entry point and the switch ``FAST_PATH`` are in ``fastgen`` (this module is
imported when the first fast path is built).
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Literal

from p4target.compiler.values import V
from p4target.compiler.context import FastContext
from p4target.compiler.entities import ActionInfo, TableInfo
from p4target.compiler.fast_deferred import DROP_PORT, TAIL, AfterIngress, Commit, Copy, Deferred, Init
from p4target.compiler.fast_errors import NoFast
from p4target.compiler.expressions import ExpressionCompiler
from p4target.compiler.fast_place_code import _CLOCK, FastPlaceCode
from p4target.compiler.fast_externs import FastExterns
from p4target.compiler.fast_packet_io import FastPacketIO
from p4target.compiler.fast_parser import FastParser
from p4target.compiler.fast_places import LateInits, Places, assigned_first, assigns_first, count_places, \
    has_return, mentions, place_of, written_places
from p4target.compiler.fast_statements import FastStatementCompiler
from p4target.compiler.fast_tables import FastTables
from p4target.compiler.naming import pyident
from p4target.compiler.program import ProgramCompiler
from p4target.compiler.scope import Sym
from p4target.compiler.types import BitT, BoolT, StackT, StructT, Type, VarbitT
from p4target.frontend import ast as A

log = logging.getLogger(__name__)


class FastCompiler(ProgramCompiler, FastContext):
    """The program compiler with packet state in locals; ``compile()`` returns the text
    of ``_fast`` (see the module docstring) or raises ``NoFast``."""

    table_helpers = False

    def __init__(self, program: A.Program, source: Path):
        super().__init__(program, source)
        self.fast_out: list[str | Deferred] = []
        self.names: dict[tuple[str, ...], str] = {}  # packet-state place -> local
        self.defaults: dict[str, str] = {}  # local -> its fresh value
        self.written: set[tuple[str, ...]] = set()  # fields something assigns
        self.count_sites: list[str] = []  # counters counted (held in _cn until the end)
        self.always_counted: set[str] = set()  # counted in ingress's first statements, index in range
        self.top_counted: set[str] = set()  # counted by a statement of a block's body itself
        self.body_ind = ""  # the indentation of the statements of the block's body
        self.reg_pending: dict[str, str] = {}  # register -> local dict of pending writes
        self.reg_dynamic: set[str] = set()  # registers accessed at an index known at run time
        self.reg_const: dict[str, set[int]] = {}  # register -> constant indexes accessed
        self.copies: list[Copy] = []
        self.block_inits: list[tuple[str, str]] = []
        self.uses_clock = False
        self.uses_clock_given = False  # ingress_global_timestamp read as `now`
        self.binds: list[str] = []  # build()-time bindings the function uses
        self.direct_counts = False  # a table with a direct counter is applied
        self.stacks: dict[tuple[str, ...], StackT] = {}
        self.lazy: set[tuple[str, ...]] = set()  # header fields read from the header's int
        self._places: Places | None = None
        self._first: set[tuple[str, ...]] | None = None
        self._prefix_counts: set[int] | None = None
        self._always: set[tuple[str, ...]] | None = None
        self._split: set[tuple[str, ...]] | None = None
        self.late_at: dict[int, list[tuple[str, ...]]] = {}  # id(statement) -> fields (LateInits)
        self.late_paths: set[tuple[str, ...]] = set()
        self.block_params: list[A.Param] = []  # the control being compiled (shared_test)
        self._tail: tuple[list[tuple[str, ...]], set[tuple[str, ...]], bool] | Literal[False] | None = None
        self.after_ingress: set[tuple[str, ...]] = set()  # sm places AfterIngress sets first
        self._written_cache: dict[tuple[str, ...], bool] = {}
        self.field_header: dict[tuple[str, ...], tuple[str, ...]] = {}  # field -> its header
        self._leaf_cache: dict[tuple[str, ...], V] = {}
        self.dirty_at: dict[tuple[str, ...], tuple[list, int]] = {}  # header -> last dirty store
        self.touched_at: dict[tuple[str, ...], tuple[list, int]] = {}  # stack -> last TouchStack
        self._bytes_cache: dict[tuple[str, ...], bool] = {}
        self.extract_at: dict[tuple[str, ...], set[int | None]] = {}  # header -> parse positions
        self.leaf_parent: dict[tuple[str, ...], StructT] = {}  # header field -> its header's type
        self.part_place: dict[str, tuple[str, ...]] = {}  # field-list part's code -> its place
        self.fast_tables = FastTables(self)
        self.fast_parser = FastParser(self)
        self.packet_io = FastPacketIO(self, self.fast_parser)
        self.fast_externs = FastExterns(self)
        self.extern_calls = self.fast_externs
        self.fast_place_code = FastPlaceCode(self)
        self.expressions = ExpressionCompiler(self, self.fast_place_code)
        self.statements: FastStatementCompiler = FastStatementCompiler(self, self.expressions,
                                                                       self.fast_place_code)

    def inline_action(self, info: ActionInfo, bound: dict[str, str]) -> None:
        self.fast_tables.inline_action(info, bound)  # FastCallEmitter's action calls

    def apply_table(self, info: TableInfo, after_terms: bool) -> V:
        return self.fast_tables.apply_table(info, after_terms)  # FastCallEmitter's table applications

    def gen_parser(self, d: A.ParserDecl) -> None:
        self.fast_parser.gen_parser(d)  # ProgramCompiler.compile's parser

    # ---- the packet state's locals (FastPlaceCode), for the other parts -----------
    def local(self, path: tuple[str, ...], default: str = "0") -> str:
        return self.fast_place_code.local(path, default)

    def field_local(self, path: tuple[str, ...], t: Type) -> str:
        return self.fast_place_code.field_local(path, t)

    def valid_local(self, path: tuple[str, ...]) -> str:
        return self.fast_place_code.valid_local(path)

    def raw_local(self, path: tuple[str, ...]) -> str:
        return self.fast_place_code.raw_local(path)

    def start_local(self, path: tuple[str, ...]) -> str:
        return self.fast_place_code.start_local(path)

    def sm_local(self, name: str) -> str:
        return self.fast_place_code.sm_local(name)

    def sm_width(self, name: str) -> int:
        return self.fast_place_code.sm_width(name)

    def set_with_validity(self, path: tuple[str, ...]) -> bool:
        return self.fast_place_code.set_with_validity(path)

    def in_stack_element(self, path: tuple[str, ...]) -> bool:
        return self.fast_place_code.in_stack_element(path)

    def path_value(self, path: tuple[str, ...], t: Type, sym: Sym | None = None,
                   parent: StructT | None = None) -> V:
        return self.fast_place_code.path_value(path, t, sym, parent)

    def bytes_field(self, path: tuple[str, ...], t: Type, parent: StructT, s: str) -> str:
        return self.fast_place_code.bytes_field(path, t, parent, s)

    def touch_stack(self, path: tuple[str, ...], t: StackT) -> str:
        return self.statements.touch_stack(path, t)

    # ---- for the deferred nodes (RenderContext) -----------------------------------------------
    def single_counted(self) -> list[str]:
        return self.fast_externs.single_counted()

    def multi_counted(self) -> list[str]:
        return self.fast_externs.multi_counted()

    def count_mode(self, x: str) -> str:
        return self.fast_externs.count_mode(x)

    def count_local(self, x: str) -> str:
        return FastExterns.count_local(x)

    def reg_cells(self) -> list[tuple[str, int]]:
        return self.fast_externs.reg_cells()

    def reg_cell_local(self, x: str, i: int) -> str:
        return FastExterns.reg_cell_local(x, i)

    def main_blocks(self) -> list[str]:
        """The names of V1Switch's six blocks, parser first (``main`` is checked to be
        V1Switch(Block(), ...) when the program is compiled)."""
        assert self.main is not None
        return [a.value.func.name for a in self.main.args]  # type: ignore[union-attr]  # each a Call of a Name

    @property
    def first_assigned(self) -> set[tuple[str, ...]]:
        if self._first is None:
            blocks = self.main_blocks()
            self._first = assigned_first(self.program, blocks)
        return self._first

    @property
    def ingress_prefix_counts(self) -> set[int]:
        """The ``count`` calls among the statements ingress starts with (see
        ``assigned_first``): every packet that gets to ingress runs them."""
        if self._prefix_counts is None:
            name = self.main_blocks()[2]
            d = next((x for x in self.program.decls if isinstance(x, A.ControlDecl) and x.name == name), None)
            self._prefix_counts = set()
            for st in d.body.stmts if d is not None and d.body is not None else []:
                if isinstance(st, A.CallStmt) and isinstance(st.call.func, A.Member) \
                        and st.call.func.name == "count":
                    self._prefix_counts.add(id(st.call))
                elif not (isinstance(st, A.Assign) and st.op is None):
                    break
        return self._prefix_counts

    @property
    def places(self) -> Places:
        if self._places is None:
            blocks = self.main_blocks()
            self._places = written_places(self.program, blocks)
        return self._places

    def maybe_written(self, path: tuple[str, ...]) -> bool:
        r = self._written_cache.get(path)
        if r is None:
            w = self.places.written
            r = self._written_cache[path] = any(path[:k] in w for k in range(1, len(path) + 1))
        return r

    def bytes_backed(self, path: tuple[str, ...]) -> bool:
        """A header nothing writes, revalidates or copies: when valid it is the bytes
        it was extracted from, so the fast path keeps only where they start."""
        r = self._bytes_cache.get(path)
        if r is None:
            p = self.places
            r = not (path[-1].isdigit() or self.maybe_written(path)
                     or any(w[:len(path)] == path for w in p.written)
                     or any(path[:k] in p.revalidated or path[:k] in p.copied
                            for k in range(1, len(path) + 1)))
            self._bytes_cache[path] = r
        return r

    def frame_tail(self) -> tuple[list[tuple[str, ...]], set[tuple[str, ...]], bool] | None:
        """A run of headers the deparser emits one after the other that are always
        the bytes they were extracted from, and that the parser extracts after
        everything else, back to back, in emit order (fabric.p4's BTH, RETH, ...
        ICMPv6, NDP at the end of the deparser; nic.p4's UDP, BTH, ... PROBE before
        its ICMPv6 and NDP, which it rewrites): valid ones are then exactly the frame
        from the first one extracted to the end of the parse, so the deparser emits
        ``data[tail:pos]`` instead of each of them (``data[tail:]`` with the payload
        when the run ends the deparser). Also the headers whose extract starts the
        run on every path through it, and whether the run ends the deparser. None
        when there is no such run."""
        if self._tail is None:
            self._tail = self._find_tail() or False
        return self._tail or None

    def _find_tail(self) -> tuple[list[tuple[str, ...]], set[tuple[str, ...]], bool] | None:
        names = self.main_blocks()
        decls = {d.name: d for d in self.program.decls if isinstance(d, (A.ParserDecl, A.ControlDecl))}
        parser, dep = decls.get(names[0]), decls.get(names[-1])
        if not isinstance(parser, A.ParserDecl) or not isinstance(dep, A.ControlDecl) or dep.body is None \
                or len(parser.params) < 2 or len(dep.params) < 2:
            return None
        htype = self.type_names.get(getattr(parser.params[1].type, "name", ""))
        dparams = {dep.params[1].name: "hdr"}
        emits = []
        for st in dep.body.stmts:
            if not (isinstance(st, A.CallStmt) and isinstance(st.call.func, A.Member)
                    and st.call.func.name == "emit" and len(st.call.args) == 1):
                return None
            emits.append(place_of(st.call.args[0].value, dparams))
        longest = self._longest_bytes_run(htype, emits)
        pparams = {parser.params[1].name: "hdr"}
        states = {st.name: st for st in parser.states}
        # the run, or failing that the longest end of it that the parser extracts last
        # (fabric.p4: its inner IPv6 header is followed by a verify, so UDP starts it)
        for k in range(len(longest)):
            tail = longest[k:]
            starts = _TailStarts(states, pparams, tail).starts()
            if starts is not None and not any(v == {True, False} for v in starts.values()):
                return tail, {p for p, v in starts.items() if v == {True}}, emits[-1] == tail[-1]
        return None

    def _longest_bytes_run(self, htype: Type | None,
                           emits: list[tuple[str, ...] | None]) -> list[tuple[str, ...]]:
        """The longest run of emitted headers kept as the frame's own bytes (the first
        of equal ones): emitted once each, never invalidated."""
        inval = self.places.invalidated

        def frame_bytes(p: tuple[str, ...] | None) -> bool:
            t: Type | None = htype
            for n in (p or ())[1:]:
                t = t.field_type(n) if isinstance(t, StructT) else None
            return p is not None and isinstance(t, StructT) and t.kind == "header" and self.bytes_backed(p) \
                and not any(p[:k] in inval for k in range(1, len(p) + 1)) and emits.count(p) == 1

        runs: list[list[tuple[str, ...]]] = [[]]
        for p in emits:
            if frame_bytes(p):
                runs[-1].append(p)  # type: ignore[arg-type]  # frame_bytes(p) holds only for a place
            elif runs[-1]:
                runs.append([])
        return max(runs, key=len)

    @property
    def always_valid(self) -> set[tuple[str, ...]]:
        """Headers every parse extracts (the states ``start`` leads to without a
        select) whose validity nothing changes: valid on every packet the fast path
        finishes (a failed extract gives up), so they need no validity local."""
        if self._always is None:
            self._always = set()
            name = self.main_blocks()[0]
            d = next((x for x in self.program.decls if isinstance(x, A.ParserDecl) and x.name == name), None)
            if d is None or len(d.params) < 2:
                return self._always
            params = {d.params[1].name: "hdr"}
            states = {st.name: st for st in d.states}
            p = self.places
            name, seen = "start", set()
            while name in states and name not in seen:
                seen.add(name)
                st = states[name]
                for x in st.stmts:
                    if isinstance(x, A.CallStmt) and isinstance(x.call.func, A.Member) \
                            and x.call.func.name == "extract" and len(x.call.args) == 1:
                        h = place_of(x.call.args[0].value, params)
                        if h is not None and not h[-1].isdigit() and not self.maybe_written(h) \
                                and not any(h[:k] in p.revalidated or h[:k] in p.invalidated
                                            for k in range(1, len(h) + 1)):
                            self._always.add(h)
                tr = st.transition
                name = tr.state if tr is not None and tr.state is not None else ""
        return self._always

    @property
    def split_bytes(self) -> set[tuple[str, ...]]:
        """Fields of headers kept as bytes that the program reads at several places:
        read once at the extract into a local (nic.p4's UDP ports)."""
        if self._split is None:
            names = self.main_blocks()
            roots = (["", "hdr", "meta", "sm"], ["hdr", "meta"], ["hdr", "meta", "sm"], ["hdr", "meta", "sm"],
                     ["hdr", "meta"], ["", "hdr"])
            decls = {x.name: x for x in self.program.decls if isinstance(x, (A.ParserDecl, A.ControlDecl))}
            counts: dict[tuple[str, ...], int] = {}
            for n, r in list(zip(names, roots, strict=False))[:4:2] + [(names[3], roots[3])]:  # parser, ingress, egress
                d = decls.get(n)
                if d is not None:
                    count_places(d, {p.name: x for p, x in zip(d.params, r, strict=False) if x}, counts)
            self._split = set()
            htype = self.type_names.get(getattr(decls[names[0]].params[1].type, "name", "")) \
                if isinstance(decls.get(names[0]), A.ParserDecl) and len(decls[names[0]].params) > 1 else None
            for p, k in counts.items():
                if len(p) != 3 or p[0] != "hdr" or not self.bytes_backed(p[:-1]):
                    continue
                ht = htype.field_type(p[1]) if isinstance(htype, StructT) else None
                if not isinstance(ht, StructT) or ht.kind != "header" or ht.field_type(p[2]) is None:
                    continue
                widths = [(n, 1 if isinstance(ft, BoolT) else ft.width) for n, ft in ht.fields]  # type: ignore[attr-defined]  # a header's fields are bit<W>, int<W> or bool
                off = sum(w for n, w in widths[:[n for n, _ in widths].index(p[2])])
                w = dict(widths)[p[2]]
                # worth a local where it saves more than the extract pays: two bytes
                # read twice, one byte three times (checksum blocks, rarely run, not counted)
                if off % 8 == 0 and ((w == 16 and k >= 2) or (w == 8 and k >= 3)):
                    self._split.add(p)
        return self._split

    # ---- hooks of the shared code generator ------------------------------------------
    def param_bindings(self, params, targets, scope):
        super().param_bindings(params, targets, scope)
        return []  # nothing to bind: the parameters are places in the packet state

    def block_local_code(self, block: str, py: str, zero: str) -> str:
        code = pyident("lv", block, py)
        self.block_inits.append((code, zero))
        return code

    def struct_packer(self, fmt: str) -> str:
        """The bound ``struct.Struct(fmt).pack`` (one per format)."""
        if "from struct import Struct as _Struct" not in self.binds:
            self.binds.append("from struct import Struct as _Struct")
        name = "_PK_" + re.sub(r"\W", "_", fmt[1:])
        line = f"{name} = _Struct({fmt!r}).pack"
        if line not in self.binds:
            self.binds.append(line)
        return name

    def gen_action(self, info, scope, preamble, function=False):
        # bodies are compiled where they run (table dispatch, direct calls)
        d = info.decl
        info.empty = not function and not d.body.stmts and not any(p.direction for p in d.params)

    # ---- controls ----------------------------------------------------------------------------
    def declare_struct(self, d: A.StructLike) -> None:
        """Refuses, before any analysis looks at the program's headers, the header
        types whose layout the fast path does not handle. A varbit field makes the
        header's width and the offsets of the fields after it run-time values: its
        extract, field reads, splits, emits and hashes (all at constant offsets here)
        are the general path's alone."""
        super().declare_struct(d)
        if d.type_params:  # generic: checked as each concrete S<...> is declared
            return
        t = self.type_names[d.name]
        if d.kind != "header":
            return
        if any(isinstance(ft, StructT) for _, ft in t.fields):  # type: ignore[attr-defined]  # t is a StructT (the header or struct being emitted)
            raise NoFast(f"header {d.name} has a struct-typed field")
        for f in d.fields:
            if isinstance(t.field_type(f.name), VarbitT):  # type: ignore[attr-defined]  # as above
                raise NoFast(f"varbit field {d.name}.{f.name} at {f.loc}")

    def declare_sub_block(self, d, decl, parent, scope, in_parser):
        raise NoFast(f"{decl.name} instantiated at {d.loc}")  # sub-controls/parsers: general path

    def begin_fast(self, kind: str) -> None:
        self.out = self.fast_out
        self.ind = "    "
        self.fn_kind = kind

    def gen_control(self, d: A.ControlDecl, role: str) -> str:
        self.block_inits = []
        named = set(self.names)  # (the setup compiles the block's table keys)
        self.block_params = d.params
        if role in ("ingress", "egress"):
            self.plan_late_inits(d)
        scope, _pre, _cls, inits, _params = self.control_setup(d, role)
        self.begin_fast("deparser" if role == "deparser" else "apply")
        self.scope = scope.child()
        if role == "egress":
            self.out.append(AfterIngress(self.ind, named))
        elif role == "compute":
            self.emit(f"if {self.sm_local('egress_spec')} == {DROP_PORT}:")
            self.emit("    return None")  # an egress drop: the general path counts it
        elif role == "deparser":
            self.emit("_o = []")
        for code, zero in self.block_inits:
            self.emit(f"{code} = {zero}")
        self.emit_lines(inits)
        assert d.body is not None
        if has_return(d.body.stmts):
            self.emit("while True:")
            self.indent()
            self.body_ind = self.ind
            self.stmts(d.body.stmts)
            self.emit("break")
            self.dedent()
        else:
            self.body_ind = self.ind
            self.stmts(d.body.stmts)
        self.body_ind = ""
        if role == "deparser":
            tail = self.frame_tail()
            if tail is not None and tail[2]:  # the tail's headers and the payload, as they came
                tl = self.local(TAIL, "None")
                self.emit(f"_o.append(data[pos:] if {tl} is None else data[{tl}:])")
            else:
                self.emit("_o.append(data[pos:])")
            self.out.append(Commit(self.ind))
            self.emit("return _op, b''.join(_o)")
        self.scope = self.global_scope
        return pyident("c", d.name)

    def plan_late_inits(self, d: A.ControlDecl) -> None:
        """``late_at``/``late_paths`` for the metadata only control ``d`` names."""
        assert d.body is not None
        names = self.main_blocks()
        roots = (["", "hdr", "meta", "sm"], ["hdr", "meta"], ["hdr", "meta", "sm"], ["hdr", "meta", "sm"],
                 ["hdr", "meta"], ["", "hdr"])
        decls = {x.name: x for x in self.program.decls if isinstance(x, (A.ParserDecl, A.ControlDecl))}
        others: set[tuple[str, ...]] = set()
        for n, r in zip(names, roots, strict=False):
            o = decls.get(n)
            if o is not None and o is not d:
                mentions(o, {p.name: x for p, x in zip(o.params, r, strict=False) if x}, others)
        if len(d.params) < 2:
            return
        params = {p.name: x for p, x in zip(d.params, ["hdr", "meta", "sm"], strict=False)}
        mt = self.type_names.get(getattr(d.params[1].type, "name", ""))
        leaves: list[tuple[str, ...]] = []

        def walk(t: Type | None, path: tuple[str, ...]) -> None:
            if isinstance(t, StructT) and t.kind == "struct":
                for n, ft in t.fields:
                    walk(ft, path + (n,))
            elif isinstance(t, (BitT, BoolT)):
                leaves.append(path)

        walk(mt, ("meta",))
        li = LateInits(d, params, others)
        for p in leaves:
            if p in self.first_assigned:
                continue
            st = li.place(p, d.body.stmts)
            if st is not None:
                if not assigns_first(st, p, params):
                    self.late_at.setdefault(id(st), []).append(p)
                self.late_paths.add(p)

    # ---- the function -------------------------------------------------------------------------
    def assemble(self) -> str:
        if self.lazy & self.written:
            raise NoFast("a field read from its header's bits is assigned")  # written_places missed it
        self.sm_local("egress_spec")
        changed = True
        while changed:
            changed = False
            for c in self.copies:
                changed |= c.settle(self)
        body: list[str] = []
        for item in self.fast_out:
            if isinstance(item, Deferred):
                if not isinstance(item, Init):
                    body += item.render(self)
                else:
                    body.append(item)  # type: ignore[arg-type]  # an Init stays a Deferred until the body is assembled (rendered below)
            else:
                body.append(item)
        lines = ["def _fast(data, ingress_port, now):", "    _dl = len(data)  # the frame's length (data is bytes)"]
        for item in body:
            lines += item.render(self) if isinstance(item, Init) else [item]
        self.uses_clock = self.uses_clock_given or any(p in self.names for p in _CLOCK)
        return "\n".join(lines)


class _TailStarts:
    """For each header of ``tail``, whether its extract starts the tail (True), follows
    another of it (False), or both; None when the parser does not extract ``tail``
    last, back to back, in emit order."""

    def __init__(self, states: dict[str, A.ParserState], pparams: dict[str, str],
                 tail: list[tuple[str, ...]]) -> None:
        self.states = states
        self.pparams = pparams
        self.tail = tail
        self.found: dict[tuple[str, ...], set[bool]] = {}
        self.seen: set[tuple[str, int]] = set()

    def starts(self) -> dict[tuple[str, ...], set[bool]] | None:
        return self.found if self.walk("start", -1) else None

    def walk(self, name: str, last: int) -> bool:
        if name in ("accept", "reject") or (name, last) in self.seen:
            return True
        self.seen.add((name, last))
        st = self.states.get(name)
        if st is None:
            return False
        for x in st.stmts:
            if isinstance(x, A.CallStmt) and isinstance(x.call.func, A.Member) \
                    and x.call.func.name in ("extract", "advance"):
                p = place_of(x.call.args[0].value, self.pparams) if x.call.args else None
                if x.call.func.name == "extract" and len(x.call.args) == 1 and p in self.tail:
                    i = self.tail.index(p)
                    if i <= last:
                        return False
                    self.found.setdefault(p, set()).add(last < 0)
                    last = i
                elif last >= 0:
                    return False  # something else moves the parse inside the tail
            elif not isinstance(x, (A.Assign, A.VarDecl)) and (last >= 0 or not isinstance(x, A.CallStmt)):
                return False  # a call inside the tail, or an extract nested in a statement
        tr = st.transition
        if tr is None:
            return False
        targets = [tr.state] if tr.state is not None else [c.state for c in tr.cases]
        return all(self.walk(t, last) for t in targets)
