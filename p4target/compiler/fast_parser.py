"""The fast path's parser (``FastParser``, an object ``FastCompiler``
(``fast_compiler``) composes): straight-line code over the frame's bytes instead of parser
state functions. Each state is pasted where the previous state's select chooses it
(on every path when that stays under ``PASTE_PARSER_MAX``, else a state several
transitions lead to is emitted once, behind ``_ps`` tests), at constant offsets
while the path's headers are known (``spos``); a state that selects itself and
extracts into ``stack.next`` becomes a ``while True:`` loop over locals. An extract
sets the header's int (or, for a header kept as the frame's bytes, where it starts)
and leaves the fields to split to a ``Split`` node (``fast_deferred``).
"""

from __future__ import annotations

from p4target.compiler import ir
from p4target.compiler.context import FastContext
from p4target.compiler.values import V
from p4target.compiler.fast_deferred import NEXT, TAIL, Init, Split, ValidFlag
from p4target.compiler.fast_errors import NoFast
from p4target.compiler.scope import Scope
from p4target.compiler.types import StackT, StructT
from p4target.frontend import ast as A

MAX_LINES = 6000  # a parser whose pasted states would be longer gets no fast path
# a parser whose states, each pasted on every path into it, add up to at most this
# many statements and transitions is pasted whole (no join states, see parser_joins)
PASTE_PARSER_MAX = 400


class FastParser:
    """The parser and ``packet_in``'s extract of the fast compiler ``ctx``, emitted
    through it; reads its packet-state locals (``local``, ``raw_local``, ...) and
    ``frame_tail``. It owns where the parse is (``spos``) and, while a parser is
    compiled, its states, join states and scope."""

    def __init__(self, ctx: FastContext) -> None:
        self.ctx = ctx
        self.spos: int | None = None  # the parse's position when it is a constant (at)
        self.states: dict[str, A.ParserState] = {}
        self.joins: dict[str, int] = {}
        self.parser_scope: Scope = ctx.global_scope  # (the parser's, once gen_parser made it)

    # ---- packet_in ---------------------------------------------------------------------------
    def extract(self, node: ir.Extract) -> None:
        # (a header with a varbit field, extracted with a length: no such program gets
        # here, declare_struct refused it)
        emit = self.ctx.emit_expr
        if node.stack is not None and node.member is None:
            self.extract_next(emit(node.stack))
            return
        v = emit(node.place)  # type: ignore[arg-type]  # a header outside a stack, or s.next.member, has its place
        if v.path is None or not isinstance(v.type, StructT) or v.type.kind != "header":
            raise NoFast("extract into something other than a packet header")
        n = v.type.width // 8
        here, end = self.at(0), self.at(n)
        self.ctx.emit(f"if {end} > _dl: return None")
        if self.ctx.bytes_backed(v.path):
            tail = self.ctx.frame_tail()
            if tail is not None and v.path in tail[1]:  # where the frame's tail starts
                self.ctx.emit(f"{self.ctx.start_local(v.path)} = {self.ctx.local(TAIL, 'None')} = {here}")
            else:
                self.ctx.emit(f"{self.ctx.start_local(v.path)} = {here}")
            for fname, ft in v.type.fields:
                fp = v.path + (fname,)
                if fp in self.ctx.split_bytes:
                    self.ctx.lazy.add(fp)
                    self.ctx.emit(f"{self.ctx.field_local(fp, ft)} = {self.ctx.bytes_field(fp, ft, v.type, here)}")
            self.ctx.out.append(ValidFlag(self.ctx.ind, v.path))
            self.move(n)
            return
        raw = self.ctx.raw_local(v.path)
        self.ctx.extract_at.setdefault(v.path, set()).add(self.spos)
        self.ctx.emit(f"{raw} = int.from_bytes(data[{here}:{end}], 'big')")
        self.ctx.dirty_at.pop(v.path, None)
        self.ctx.out.append(Split(self.ctx.ind, v.path, v.type, raw, self.spos))
        self.ctx.out.append(ValidFlag(self.ctx.ind, v.path))
        self.move(n)

    # where the parse is: a constant while every path here extracted the same
    # headers (``spos``), else the local ``pos``, set from the constant (``settle_pos``)
    # before anything that needs it (a stack loop, advance, lookahead, a join state,
    # accept)
    def at(self, off: int) -> str:
        if self.spos is not None:
            return str(self.spos + off)
        return f"pos + {off}" if off else "pos"

    def move(self, n: int) -> None:
        if self.spos is not None:
            self.spos += n
        else:
            self.ctx.emit(f"pos += {n}")

    def settle_pos(self) -> None:
        if self.spos is not None:
            self.ctx.emit(f"pos = {self.spos}")
            self.spos = None

    def before_packet_in_method(self, name: str) -> None:
        """What comes before ``packet_in``'s method ``name`` (compiled by the
        general code, ``PacketIO.packet_in_method``)."""
        if name != "extract":
            self.settle_pos()  # advance, lookahead: the general code's, on pos

    def extract_next(self, s: V) -> None:
        t = s.type
        assert isinstance(t, StackT)
        if s.path is None:
            raise NoFast("stack outside the packet state")
        nxt = self.ctx.local(s.path + (NEXT,))
        self.settle_pos()
        self.ctx.touch_stack(s.path, t)
        n = t.elem.width // 8
        self.ctx.emit(f"if {nxt} >= {t.size} or pos + {n} > _dl: return None")
        x = self.ctx.tmp("x")
        self.ctx.emit(f"{x} = int.from_bytes(data[pos:pos + {n}], 'big')")
        for i in range(t.size):
            ep = s.path + (str(i),)
            self.ctx.emit("else:" if i == t.size - 1 and i else f"{'if' if i == 0 else 'elif'} {nxt} == {i}:")
            self.ctx.indent()
            self.ctx.dirty_at.pop(ep, None)
            self.ctx.out.append(Split(self.ctx.ind, ep, t.elem, x))
            self.ctx.emit(f"{self.ctx.valid_local(ep)} = True")
            self.ctx.dedent()
        self.ctx.emit(f"{nxt} += 1")
        self.ctx.emit(f"pos += {n}")

    # ---- parser ---------------------------------------------------------------------------
    def gen_parser(self, d: A.ParserDecl) -> None:
        if d.ctor_params:
            raise NoFast("parser constructor parameter")
        scope = self.ctx.global_scope.child()
        self.ctx.param_bindings(d.params, ["packet_in", "hdr", "meta", "sm"], scope)
        self.ctx.scope = scope
        self.ctx.block_inits = []
        self.ctx.block_locals(d.name, d.locals, scope, parser=True)
        inits = self.ctx.locals_inits
        self.states = {s.name: s for s in d.states}
        if "start" not in self.states:
            raise NoFast("no start state")
        self.parser_scope = scope
        self.ctx.begin_fast("parser")
        self.ctx.fast_out.append(Init(self.ctx.ind))
        self.spos = 0
        for code, zero in self.ctx.block_inits:
            self.ctx.emit(f"{code} = {zero}")
        self.ctx.emit_lines(inits)
        order, self.joins = self.parser_joins()
        if self.joins:
            self.ctx.emit("_ps = 0")
        self.fast_state("start", ())
        for name in order:  # each state reached from several places: once, in order
            if name in self.joins:
                self.spos = None
                self.ctx.emit(f"if _ps == {self.joins[name]}:")
                self.ctx.indent()
                n = len(self.ctx.out)
                self.fast_state(name, ())
                if len(self.ctx.out) == n:
                    self.ctx.emit("pass")
                self.ctx.dedent()
        self.ctx.scope = self.ctx.global_scope

    def parser_joins(self) -> tuple[list[str], dict[str, int]]:
        """The parser states in topological order, and those that several transitions
        lead to (numbered): their code is emitted once, after the states before them,
        and the transitions set ``_ps`` instead of pasting it again."""
        refs: dict[str, int] = {}
        succ: dict[str, list[str]] = {}
        for s in self.states.values():
            tr = s.transition
            targets = ([tr.state] if tr.state is not None else [c.state for c in tr.cases]) if tr else []
            succ[s.name] = [t for t in targets if t != s.name and t in self.states]
            for t in succ[s.name]:
                refs[t] = refs.get(t, 0) + 1
        order: list[str] = []
        mark: dict[str, int] = {}

        def visit(n: str) -> None:
            if mark.get(n) == 1:
                raise NoFast("a parser loop through several states")
            if mark.get(n) == 2:
                return
            mark[n] = 1
            for t in succ.get(n, []):
                visit(t)
            mark[n] = 2
            order.append(n)

        visit("start")
        order.reverse()
        # pasted where each transition chooses it, a state costs its statements
        # (and its successors') once per path into it: when that stays small, every
        # state is pasted (no `_ps` tests at run time)
        size: dict[str, int] = {}
        for n in reversed(order):
            size[n] = 1 + len(self.states[n].stmts) + sum(size.get(t, 0) for t in succ.get(n, []))
        if size.get("start", 0) <= PASTE_PARSER_MAX:
            return order, {}
        joins = {n: i + 1 for i, n in enumerate(n for n in order if refs.get(n, 0) > 1 and n != "start")}
        return order, joins

    def goto(self, target: str, path: tuple[str, ...]) -> None:
        """Continue the parse in ``target``: pasted here, or through ``_ps`` for a join."""
        if target in self.joins:
            self.settle_pos()
            self.ctx.emit(f"_ps = {self.joins[target]}")
        else:
            self.fast_state(target, path)

    def fast_state(self, name: str, path: tuple[str, ...]) -> None:
        if name in ("accept", "reject"):  # reject: as the general path (see state_target)
            self.settle_pos()
            return
        s = self.states.get(name)
        if s is None or name in path:
            raise NoFast("a parser loop through several states")
        if len(self.ctx.fast_out) > MAX_LINES:
            raise NoFast("parser too long once pasted")
        tr = s.transition
        if tr is None:
            raise NoFast("state without transition")
        targets = [tr.state] if tr.state is not None else [c.state for c in tr.cases]
        saved = self.ctx.scope
        self.ctx.scope = self.parser_scope.child()
        if name in targets:
            if not self.extracts_next(s.stmts):
                raise NoFast("a parser loop that extracts into no stack")
            self.settle_pos()
            exit_var = self.ctx.tmp("nx")
            exits: list[str] = []
            self.ctx.emit("while True:")
            self.ctx.indent()
            self.ctx.stmts(s.stmts)
            self.transition(tr, path + (name,), (name, exit_var, exits))
            self.ctx.dedent()
            if len(exits) == 1:
                self.goto(exits[0], path + (name,))
            for k, t in enumerate(exits if len(exits) > 1 else []):
                self.ctx.emit("else:" if k == len(exits) - 1 else f"{'if' if k == 0 else 'elif'} {exit_var} == {k}:")
                self.ctx.indent()
                self.branch(t, path + (name,))
                self.ctx.dedent()
        else:
            self.ctx.stmts(s.stmts)
            self.transition(tr, path + (name,), None)
        self.ctx.scope = saved

    def extracts_next(self, stmts: list[A.Stmt]) -> bool:
        """True when the state always extracts into ``stack.next`` (bounds the loop)."""
        for st in stmts:
            if isinstance(st, A.CallStmt) and isinstance(st.call.func, A.Member) \
                    and st.call.func.name == "extract" and st.call.args:
                a = st.call.args[0].value
                if isinstance(a, A.Member) and a.name == "next" \
                        and isinstance(self.ctx.value(a.obj).type, StackT):
                    return True
        return False

    def branch(self, target: str, path: tuple[str, ...],
               loop: tuple[str, str, list[str]] | None = None) -> None:
        if loop is not None:
            name, exit_var, exits = loop
            if target == name:
                self.ctx.emit("continue")
                return
            if target not in exits:
                exits.append(target)
            self.ctx.emit(f"{exit_var} = {exits.index(target)}")
            self.ctx.emit("break")
            return
        n = len(self.ctx.out)
        self.goto(target, path)
        if len(self.ctx.out) == n:
            self.ctx.emit("pass")

    def transition(self, tr: A.Transition, path: tuple[str, ...],
                   loop: tuple[str, str, list[str]] | None) -> None:
        if tr.state is not None:
            if loop is None:
                self.goto(tr.state, path)
            else:
                self.branch(tr.state, path, loop)
            return
        kvars = []
        for i, ke in enumerate(tr.select or []):
            k = self.ctx.value(ke)
            # one name per key position for every select: its if/elif tests all run
            # before any state pasted in a case (fewer locals: a cheaper call)
            kv = f"_k{i}"
            self.ctx.emit(f"{kv} = {k.code}")
            kvars.append((kv, k))
        first = True
        sp = self.spos  # every case starts where the select is
        for case in tr.cases:
            self.spos = sp
            items = case.keyset.items if isinstance(case.keyset, A.ListExpr) else [case.keyset]
            if len(items) == 1 and isinstance(items[0], A.DefaultExpr):
                if first:
                    self.branch(case.state, path, loop)
                    return
                if loop is None and case.state in ("accept", "reject") and sp is None:
                    return  # falls through to the end of the parse
                self.ctx.emit("else:")
                self.ctx.indent()
                self.branch(case.state, path, loop)
                self.ctx.dedent()
                self.spos = None  # (each case settled its own)
                return
            conds = self.ctx.case_conds(case, kvars)
            self.ctx.emit(f"{'if' if first else 'elif'} {' and '.join(conds) if conds else 'True'}:")
            first = False
            self.ctx.indent()
            self.branch(case.state, path, loop)
            self.ctx.dedent()
        self.spos = None
        self.ctx.emit("else:")
        self.ctx.emit("    return None")  # no case matched: error.NoMatch, the general path's
