"""The fast path's statements (``FastStatementCompiler``, the ``StatementCompiler``
that ``FastCompiler``, ``fast_compiler``, composes): the shared compiler's statements with the
packet state in locals. Stores go to a field's local and mark its header dirty
(the deparser then rebuilds it from its fields) once per straight run of code; a
header, struct or stack assigned whole is copied place by place (``Copy``,
``fast_deferred``) or stored field by field from an object; setValid/setInvalid
set the validity local; a table applied in a statement is compiled before it
(``fast_tables``); checksum updates whose conditions start with the same test run
it once (``stmts``).
"""

from __future__ import annotations

from dataclasses import replace

from p4target.compiler import ir
from p4target.compiler.context import FastContext
from p4target.compiler.expressions import ExpressionCompiler
from p4target.compiler.fast_calls import FastCallEmitter
from p4target.compiler.fast_place_code import FastPlaceCode
from p4target.compiler.statements import StatementCompiler
from p4target.compiler.typecheck_call import CallChecker
from p4target.compiler.fast_deferred import DIRTY, NEXT, TOUCHED, Copy, Deferred, LateInit, TouchStack
from p4target.compiler.fast_errors import NoFast
from p4target.compiler.fast_places import CHECKSUM_UPDATES, calls_in, first_conjunct, mentions, place_of, shape
from p4target.compiler.naming import pyfield
from p4target.compiler.types import BoolT, StackT, StructT, Type
from p4target.frontend import ast as A


class FastStatementCompiler(StatementCompiler):
    """The statements, stores and header methods of the fast compiler ``ctx``, emitted
    through it into its ``out`` at its ``ind``; the packet-state locals they use are
    ``places``' (``local``, ``valid_local``, ...: the fast path's generator of expressions); what it does not override is
    the general ``StatementCompiler``'s."""

    ctx: FastContext

    def __init__(self, ctx: FastContext, expressions: ExpressionCompiler,
                 places: FastPlaceCode) -> None:
        super().__init__(ctx, expressions)
        self.places = places
        self.calls = CallChecker(ctx, expressions, self.checker, self, in_place=True)
        self.call_emitter = FastCallEmitter(ctx, expressions.emitter, self, places)

    # ---- what has run here (a stack's freshness, a header's dirty flag) --------------------
    def touch_stack(self, path: tuple[str, ...], t: StackT) -> str:
        self.ctx.stacks[path] = t
        last = self.ctx.touched_at.get(path)
        if last is None or last[0] is not self.ctx.out or not self.straight_since(last[1], self.ctx.ind):
            self.ctx.touched_at[path] = (self.ctx.out, len(self.ctx.out))
            for i in range(t.size):
                self.ctx.dirty_at.pop(path + (str(i),), None)
            self.ctx.out.append(TouchStack(self.ctx.ind, path, t))
        return self.places.local(path + (TOUCHED,), "False")

    def straight_since(self, index: int, ind: str) -> bool:
        """True when the item at ``index`` was emitted at indentation ``ind`` and
        everything after it is in the same block or nested in it (so it has run)."""
        n = len(ind)
        for k, x in enumerate(self.ctx.out[index:]):
            depth = len(x.ind) if isinstance(x, Deferred) else len(x) - len(x.lstrip(" "))
            if depth < n or (k == 0 and depth != n):
                return False
        return index < len(self.ctx.out)

    def sm_store(self, field: str, code: str) -> str:
        self.ctx.written.add(("sm", field))
        return f"{self.places.sm_local(field)} = {code}"

    # ---- statements ----------------------------------------------------------------------
    def stmts(self, stmts: list[A.Stmt]) -> None:
        """As the shared compiler, except that checksum updates one after the other
        whose conditions start with the same test (fabric.p4's ``meta.trimmed == 1 &&
        ...``) run it once: it reads nothing they write and calls nothing."""
        i = 0
        while i < len(stmts):
            group = self.shared_test(stmts, i)
            if len(group) < 2:
                self.stmt(stmts[i])
                i += 1
                continue
            first = first_conjunct(group[0].call.args[0].value)[0]  # type: ignore[attr-defined]  # the group's statements are method-call statements
            self.ctx.emit(f"if {self.expressions.expr_as(first, BoolT(), 'checksum condition')}:")
            self.ctx.indent()
            for st in group:
                call = st.call  # type: ignore[attr-defined]  # as above
                rest = first_conjunct(call.args[0].value)[1]
                arg = replace(call.args[0], value=rest if rest is not None else A.BoolLit(call.loc, True))
                self.stmt(replace(st, call=replace(call, args=[arg] + call.args[1:])))  # type: ignore[call-arg]  # the statements of the group are method-call statements
            self.ctx.dedent()
            i += len(group)

    def shared_test(self, stmts: list[A.Stmt], i: int) -> list[A.Stmt]:
        """The checksum updates from ``stmts[i]`` on whose conditions start with one
        pure test that none of them writes (the checksum field, argument 3)."""
        group: list[A.Stmt] = []
        first = None
        for st in stmts[i:]:
            call = st.call if isinstance(st, A.CallStmt) else None
            if call is None or not isinstance(call.func, A.Name) or call.func.name not in CHECKSUM_UPDATES \
                    or len(call.args) != 4 or call.args[0].value is None:
                break
            c, rest = first_conjunct(call.args[0].value)
            if rest is None or (first is not None and shape(c) != shape(first)):
                break
            calls: list[A.Call] = []
            calls_in(c, calls)
            if calls:
                break
            first = c
            group.append(st)
        if group:
            names = {p.name: p.name for p in self.ctx.block_params}
            read: set[tuple[str, ...]] = set()
            mentions(first, names, read)
            for st in group:
                w = place_of(st.call.args[2].value, names)  # type: ignore[attr-defined]  # as above
                if w is None or any(q[:len(w)] == w or w[:len(q)] == q for q in read):
                    return []
        return group

    def stmt(self, s: A.Stmt) -> None:
        for p in self.ctx.late_at.pop(id(s), ()):
            self.ctx.out.append(LateInit(self.ctx.ind, p))
        self.ctx.last_loc = s.loc
        if isinstance(s, (A.For, A.ForIn)):
            raise NoFast(f"for loop at {s.loc}")  # not generated here: the general path runs it
        if isinstance(s, A.Exit):
            self.ctx.emit("return None")
            return
        if isinstance(s, A.Return):
            if s.value is not None or self.ctx.fn_kind not in ("action", "apply"):
                raise NoFast("return")
            self.ctx.emit("break")  # out of the block's `while True:`
            return
        checker = self.expressions.checker
        saved = checker.entered, checker.base, self.ctx.tmp_count
        checker.entered, checker.base = 0, checker.depth
        super().stmt(s)  # an exception abandons the whole fast path: no finally
        # a temporary lives in the code of the statement that made it: the next
        # statement reuses its names (every local of ``_fast`` costs each call)
        checker.entered, checker.base, self.ctx.tmp_count = saved

    def write_assign(self, node: ir.Assign) -> None:
        """A header, struct or stack assigned whole to a place of the packet state is
        copied place by place from another place, or stored field by field from an
        object; anything else is stored as the shared compiler stores it."""
        t = node.target.type
        emit = self.expressions.emitter.emit
        for spill in node.pre:  # written once: the shared compiler's store finds them written
            emit(spill)
        if isinstance(t, (StructT, StackT)):
            dst = emit(node.target)
            if dst.path is not None:
                src = emit(node.value.operand) if isinstance(node.value, ir.Convert) else None
                if src is not None and src.path is not None:
                    self.copy_place(dst.path, src.path, t)
                    return
                # a local variable or an initializer: an object, stored field by field
                obj = self.ctx.tmp("obj")
                self.ctx.emit(f"{obj} = {emit(node.value).code}")
                self.store_object(dst.path, t, obj)
                return
        super().write_assign(node)

    def store_object(self, path: tuple[str, ...], t: Type, code: str) -> None:
        """Statements storing the object ``code`` into the place ``path``."""
        if isinstance(t, StructT) and t.kind in ("header", "struct"):
            for n, ft in t.fields:
                if isinstance(ft, (StructT, StackT)):
                    self.store_object(path + (n,), ft, f"{code}.{pyfield(n)}")
                    continue
                if self.places.path_value(path + (n,), ft, parent=t).path in self.ctx.lazy:
                    raise NoFast("a field read from its header's bits is assigned")
                self.ctx.written.add(path + (n,))
                self.ctx.emit(f"{self.places.field_local(path + (n,), ft)} = {code}.{pyfield(n)}")
            if t.kind == "header":
                self.ctx.dirty_at.pop(path, None)
                self.ctx.emit(f"{self.places.valid_local(path)} = {code}._v")
                self.ctx.emit(f"{self.places.local(path + (DIRTY,), 'False')} = True")
        elif isinstance(t, StackT):
            self.touch_stack(path, t)
            for i in range(t.size):
                self.store_object(path + (str(i),), t.elem, f"{code}.h[{i}]")
            self.ctx.emit(f"{self.places.local(path + (NEXT,))} = {code}.nxt")
        else:
            raise NoFast("header union as a value")

    def copy_place(self, dst: tuple[str, ...], src: tuple[str, ...], t: Type) -> None:
        if isinstance(t, StructT) and t.kind == "header":
            self.ctx.dirty_at.pop(dst, None)  # the copy sets the dirty flag
            c = Copy(self.ctx.ind, dst, src, t)
            self.ctx.copies.append(c)
            self.ctx.out.append(c)
        elif isinstance(t, StructT) and t.kind == "struct":
            for n, ft in t.fields:
                self.copy_place(dst + (n,), src + (n,), ft)
        elif isinstance(t, StackT):
            self.touch_stack(dst, t)
            self.touch_stack(src, t)
            for i in range(t.size):
                self.copy_place(dst + (str(i),), src + (str(i),), t.elem)
            self.ctx.emit(f"{self.places.local(dst + (NEXT,))} = {self.places.local(src + (NEXT,))}")
        elif isinstance(t, StructT):
            raise NoFast("header union copy")
        else:
            self.ctx.written.add(dst)
            self.ctx.emit(f"{self.places.field_local(dst, t)} = {self.places.field_local(src, t)}")

    def store_node(self, target: ir.Expr, code: str) -> None:
        if not isinstance(target, ir.Slice):
            v = self.expressions.emitter.emit(target)
            if v.path is not None:
                if isinstance(v.type, (StructT, StackT)):
                    raise NoFast("whole header stored")
                if v.path == ("sm", "packet_length"):
                    raise NoFast("packet_length written")  # counters count the frame length
                self.ctx.written.add(v.path)
                self.ctx.emit(f"{v.code} = {code}")
                header = self.ctx.field_header.get(v.path)
                if header is not None:  # the deparser must put the fields back in
                    last = self.ctx.dirty_at.get(header)
                    if last is None or last[0] is not self.ctx.out or not self.straight_since(last[1], self.ctx.ind):
                        self.ctx.dirty_at[header] = (self.ctx.out, len(self.ctx.out))
                        self.ctx.emit(f"{self.places.local(header + (DIRTY,), 'False')} = True")
                return
        super().store_node(target, code)

    def call_stmt(self, e: A.Call) -> None:
        v = self.call(e, as_stmt=True)
        if v is not None and v.code and not (v.sym is not None and v.sym.kind == "tableresult"):
            self.ctx.emit(v.code)
