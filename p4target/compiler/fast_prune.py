"""The program as the fast path compiles it: control code that can only end by
giving up, and code that cannot run on the fast path, taken out of the AST before
any of the fast compiler's analyses (docs/target-internals.md, "The fast path").

Why: the fast path gives up (``return None``: nothing has changed, the general path
runs the frame) at ``exit`` and at the extern functions it leaves to the general
path (``truncate``, ``clone``, ...). A statement list that always reaches one of
them never finishes on the fast path, so what it assigns never reaches the
deparser. Left in, its writes still count in ``written_places`` and keep a header
split into fields and rebuilt on output (fabric.p4's trimming writes
``hdr.udp.length`` and ``hdr.ipv6.traffic_class`` before its ``truncate``: every uN
packet then paid for UDP as an int and for rebuilding those fields). With those
lists reduced to ``exit``:

- a user-metadata field whose every remaining write assigns the literal 0 is 0
  wherever the fast path reads it (the fresh value is 0 too): fabric.p4's
  ``meta.trimmed``, set to 1 only before the ``truncate``;
- an ``if`` whose condition (its first ``&&`` operand) compares such a field with
  a non-zero constant never runs its then-branch, and an ``update_checksum`` with
  such a condition never writes its checksum: both are dropped (the else-branch
  stays). fabric.p4's four UDP checksum updates of trimmed packets go, and with
  them the last writes of ``hdr.udp``: it stays the frame's own bytes.

The general path compiles the original program; only the fast path's copy is
pruned, and only in controls and actions (the parser is left as it is).
"""

from __future__ import annotations

from dataclasses import replace

from p4target.compiler.fast_externs import _GIVE_UP
from p4target.compiler.fast_places import CHECKSUM_UPDATES, first_conjunct, has_return, place_of, written_places
from p4target.frontend import ast as A


def _give_up_names(program: A.Program) -> set[str]:
    """The extern functions the fast path gives up at that no action or function of
    the program shadows."""
    own: set[str] = set()
    for d in program.decls:
        if isinstance(d, (A.ActionDecl, A.FunctionDecl)):
            own.add(d.name)
        elif isinstance(d, A.ControlDecl):
            own |= {x.name for x in d.locals if isinstance(x, A.ActionDecl)}
    return _GIVE_UP - own


def _gives_up(stmts: list[A.Stmt], names: set[str]) -> bool:
    """Whether running ``stmts`` always reaches ``exit`` or a give-up call: one of
    them (or a block, or an if/else whose both branches do) comes before any
    ``return`` that could leave the list first."""
    for s in stmts:
        if isinstance(s, A.Exit):
            return True
        if isinstance(s, A.CallStmt) and isinstance(s.call.func, A.Name) and s.call.func.name in names:
            return True
        if isinstance(s, A.Block) and _gives_up(s.stmts, names):
            return True
        if isinstance(s, A.If) and s.other is not None and _gives_up(_body(s.then), names) \
                and _gives_up(_body(s.other), names):
            return True
        if has_return([s]):
            return False
    return False


def _body(s: A.Stmt) -> list[A.Stmt]:
    return s.stmts if isinstance(s, A.Block) else [s]


class _Pruner:
    def __init__(self, names: set[str], zero: set[tuple[str, ...]] | None = None,
                 params: dict[str, str] | None = None) -> None:
        self.names = names
        self.zero = zero or set()  # user-metadata places that are always 0
        self.params = params or {}  # the block's parameter names -> roots

    def never(self, cond: A.Expr) -> bool:
        """``cond`` is false on the fast path: its first ``&&`` operand compares an
        always-0 place with a non-zero literal (``==``) or with 0 (``!=``)."""
        c = first_conjunct(cond)[0]
        if not isinstance(c, A.Binary) or c.op not in ("==", "!="):
            return False
        for a, b in ((c.left, c.right), (c.right, c.left)):
            if isinstance(b, A.IntLit) and isinstance(a, (A.Member, A.Name)):
                p = place_of(a, self.params)
                if p is not None and p in self.zero:
                    return (b.value != 0) if c.op == "==" else (b.value == 0)
        return False

    def stmts(self, stmts: list[A.Stmt]) -> list[A.Stmt]:
        if stmts and _gives_up(stmts, self.names):
            return [A.Exit(stmts[0].loc)]
        out: list[A.Stmt] = []
        for s in stmts:
            if isinstance(s, A.Block):
                out.append(replace(s, stmts=self.stmts(s.stmts)))
            elif isinstance(s, A.If):
                if self.never(s.cond):
                    if s.other is not None:
                        out.append(A.Block(s.loc, self.stmts(_body(s.other))))
                    continue
                then = A.Block(s.then.loc, self.stmts(_body(s.then)))
                other = None if s.other is None else A.Block(s.other.loc, self.stmts(_body(s.other)))
                out.append(replace(s, then=then, other=other))
            elif isinstance(s, A.Switch):
                out.append(replace(s, cases=[c if c.body is None else replace(c, body=replace(
                    c.body, stmts=self.stmts(c.body.stmts))) for c in s.cases]))
            elif isinstance(s, A.CallStmt) and isinstance(s.call.func, A.Name) \
                    and s.call.func.name in CHECKSUM_UPDATES and s.call.args \
                    and s.call.args[0].value is not None and self.never(s.call.args[0].value):
                continue
            else:
                out.append(s)
        return out

    def control(self, d: A.ControlDecl) -> A.ControlDecl:
        locals_ = [replace(x, body=replace(x.body, stmts=self.stmts(x.body.stmts)))
                   if isinstance(x, A.ActionDecl) else x for x in d.locals]
        body = None if d.body is None else replace(d.body, stmts=self.stmts(d.body.stmts))
        return replace(d, locals=locals_, body=body)

    def program(self, program: A.Program, roles: dict[str, dict[str, str]]) -> A.Program:
        decls: list[object] = []
        for d in program.decls:
            if isinstance(d, A.ControlDecl) and not d.is_type:
                self.params = roles.get(d.name, {})
                d = self.control(d)
            elif isinstance(d, A.ActionDecl):
                self.params = {}
                d = replace(d, body=replace(d.body, stmts=self.stmts(d.body.stmts)))
            decls.append(d)
        return replace(program, decls=decls)


# the roots of the V1Switch blocks' parameters, in the package's order (as written_places)
_ROOTS = (["", "hdr", "meta", "sm"], ["hdr", "meta"], ["hdr", "meta", "sm"], ["hdr", "meta", "sm"],
          ["hdr", "meta"], ["", "hdr"])


def _main_blocks(program: A.Program) -> list[str]:
    for d in program.decls:
        if isinstance(d, A.Instance) and d.name == "main":
            return [a.value.func.name for a in d.args if isinstance(a.value, A.Call)
                    and isinstance(a.value.func, A.Name)]
    return []


def zero_places(program: A.Program, blocks: list[str]) -> set[tuple[str, ...]]:
    """User-metadata fields every write of which assigns the literal 0 (none is an
    out argument, a compound assignment or a whole-struct copy): 0 on every path."""
    places = written_places(program, blocks)
    other = places.other_written
    return {p for p in places.zero_written if p[0] == "meta"
            and not any(q[:len(p)] == p or p[:len(q)] == q for q in other)}


def prune_for_fast(program: A.Program) -> A.Program:
    """``program`` with the control code the fast path never finishes reduced to
    ``exit`` and the code that never runs there dropped (module docstring)."""
    names = _give_up_names(program)
    blocks = _main_blocks(program)
    decls = {d.name: d for d in program.decls if isinstance(d, (A.ParserDecl, A.ControlDecl))}
    roles = {name: {p.name: r for p, r in zip(decls[name].params, rs, strict=False) if r}
             for name, rs in zip(blocks, _ROOTS, strict=False) if name in decls}
    first = _Pruner(names).program(program, roles)
    zero = zero_places(first, blocks)
    if not zero:
        return first
    return _Pruner(names, zero).program(first, roles)
