"""What the program may do to the places of its packet state, read from its AST:
the analyses the fast path's generator (``fast_compiler``) and pruner
(``fast_prune``) decide the generated code's storage and initial values by, apart
from the code they emit (docs/target-internals.md, "The fast path").

- ``place_of``/``places_in``/``mentions``/``count_places``: the packet-state places
  (``("hdr", "ipv6", "dst_addr")``) an lvalue or any AST node names;
- ``written_places``: what every statement may assign, revalidate, invalidate or copy
  (``Places``);
- ``assigned_first``, ``assigns_first``, ``LateInits``: where metadata needs no fresh
  value, or gets it late;
- ``first_conjunct``, ``shape``, ``has_return``, ``calls_in``: small shape tests.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from p4target.frontend import ast as A


# calls that never write a place passed to them (others may: out/inout arguments)
READ_ONLY_CALLS = {"extract", "emit", "isValid", "setValid", "setInvalid", "apply", "count",
                   "mark_to_drop", "verify", "verify_checksum", "verify_checksum_with_payload",
                   "log_msg", "digest", "clone", "clone_preserving_field_list", "truncate",
                   "assert", "assume", "advance", "write"}


def place_of(e: A.Expr | None, params: dict[str, str]) -> tuple[str, ...] | None:
    """The packet-state place an lvalue names (``hdr.srh_segments[2].sid`` ->
    ("hdr", "srh_segments", "2", "sid")); a run-time index stops at the stack."""
    parts: list[str] = []
    while True:
        if isinstance(e, A.Slice):
            e, parts = e.obj, []
        elif isinstance(e, A.Member):
            parts.insert(0, e.name)
            e = e.obj
        elif isinstance(e, A.Index):
            parts = [str(e.index.value)] + parts if isinstance(e.index, A.IntLit) else []
            e = e.obj
        elif isinstance(e, A.Name):
            root = params.get(e.name)
            return None if root is None else (root, *parts)
        else:
            return None


@dataclass
class Places:
    """What the program may do to packet-state places (supersets, from the AST)."""
    written: set[tuple[str, ...]] = field(default_factory=set)  # assigned (or passed out)
    revalidated: set[tuple[str, ...]] = field(default_factory=set)  # setValid() called on it
    invalidated: set[tuple[str, ...]] = field(default_factory=set)  # setInvalid() called on it
    copied: set[tuple[str, ...]] = field(default_factory=set)  # source of an assignment
    # assigned the literal 0 by a plain assignment / written any other way (fast_prune)
    zero_written: set[tuple[str, ...]] = field(default_factory=set)
    other_written: set[tuple[str, ...]] = field(default_factory=set)


def written_places(program: A.Program, main_blocks: list[str]) -> Places:
    """What every statement of the program may assign: the fast path reads the other
    header fields straight from the header's bits (or its bytes in the frame)."""
    decls = {d.name: d for d in program.decls if isinstance(d, (A.ParserDecl, A.ControlDecl))}
    top_actions = [d for d in program.decls if isinstance(d, A.ActionDecl)]
    walker = _PlaceWalker(Places())
    roots = (["", "hdr", "meta", "sm"], ["hdr", "meta"], ["hdr", "meta", "sm"], ["hdr", "meta", "sm"],
             ["hdr", "meta"], ["", "hdr"])
    for name, roles in zip(main_blocks, roots, strict=False):
        d = decls.get(name)
        if d is None:
            continue
        params = {p.name: r for p, r in zip(d.params, roles, strict=False) if r}
        if isinstance(d, A.ParserDecl):
            for st in d.states:
                walker.walk(st.stmts, params)
        else:
            walker.control(d, params)
    for action in top_actions:
        walker.walk(action.body.stmts, {})
    return walker.places


class _PlaceWalker:
    """The walk of written_places over statements, recording into ``places``."""

    def __init__(self, places: Places) -> None:
        self.places = places

    def control(self, d: A.ControlDecl, params: dict[str, str]) -> None:
        if d.body is not None:
            self.walk(d.body.stmts, params)
        for x in d.locals:
            if isinstance(x, A.ActionDecl):
                self.walk(x.body.stmts, params)
            elif isinstance(x, A.TableDecl):
                # arguments an action list binds may be out/inout ones
                for prop in x.props:
                    if prop.name == "actions":
                        for item in prop.value:
                            if isinstance(item.call, A.Call):
                                self.written_args(item.call, params)

    def walk(self, stmts: list[A.Stmt], params: dict[str, str]) -> None:
        for s in stmts:
            if isinstance(s, A.Assign):
                self.assign(s, params)
            elif isinstance(s, A.Block):
                self.walk(s.stmts, params)
            elif isinstance(s, A.If):
                self.walk([s.then] + ([s.other] if s.other is not None else []), params)
            elif isinstance(s, A.Switch):
                for c in s.cases:
                    if c.body is not None:
                        self.walk(c.body.stmts, params)
            elif isinstance(s, A.CallStmt):
                self.call(s.call, params)

    def assign(self, s: A.Assign, params: dict[str, str]) -> None:
        places = self.places
        p = place_of(s.target, params)
        if p is not None:
            places.written.add(p)
            zero = s.op is None and isinstance(s.value, A.IntLit) and s.value.value == 0
            (places.zero_written if zero else places.other_written).add(p)
        p = place_of(s.value, params)
        if p is not None:
            places.copied.add(p)

    def call(self, e: A.Call, params: dict[str, str]) -> None:
        # out/inout arguments only exist in call statements (a P4 function call inside
        # an expression has no fast path; FastCompiler.assemble also checks that
        # nothing read from a header's bits was assigned)
        f = e.func
        name = f.name if isinstance(f, (A.Member, A.Name)) else ""
        if name in ("setValid", "setInvalid") and isinstance(f, A.Member):
            p = place_of(f.obj, params)
            if p is not None:
                (self.places.revalidated if name == "setValid" else self.places.invalidated).add(p)
        if name not in READ_ONLY_CALLS:
            self.written_args(e, params)

    def written_args(self, e: A.Call, params: dict[str, str]) -> None:
        for a in e.args:
            p = place_of(a.value, params)
            if p is not None:
                self.places.written.add(p)
                self.places.other_written.add(p)


def places_in(node: object, params: dict[str, str]) -> Iterator[tuple[str, ...]]:
    """Each packet-state place ``node`` (any AST node) names, read or written, once per
    mention (a whole header or struct counts as all its fields)."""
    if isinstance(node, (A.Name, A.Member, A.Index, A.Slice)):
        p = place_of(node, params)
        if p is not None:
            yield p
        while isinstance(node, (A.Member, A.Index, A.Slice)):  # run-time indexes, slice bounds
            if isinstance(node, A.Index):
                yield from places_in(node.index, params)
            node = node.obj
        return
    if isinstance(node, list):
        for x in node:
            yield from places_in(x, params)
    elif hasattr(node, "__dataclass_fields__"):
        for name in node.__dataclass_fields__:
            if name != "loc":
                yield from places_in(getattr(node, name), params)


def mentions(node: object, params: dict[str, str], out: set[tuple[str, ...]]) -> None:
    """Every packet-state place ``node`` names, read or written, added to ``out``."""
    out.update(places_in(node, params))


def assigned_first(program: A.Program, main_blocks: list[str]) -> set[tuple[str, ...]]:
    """Metadata and standard_metadata places every packet assigns before anything
    reads them: a plain assignment among the statements a block starts with
    (assignments and counter counts, up to anything else) that nothing before it in
    the pipeline names (fabric.p4's ``meta.drop_reason = 0; ...`` at the top of
    ingress, the parser's start state). The fast path gives them no fresh value."""
    decls = {d.name: d for d in program.decls if isinstance(d, (A.ParserDecl, A.ControlDecl))}
    roots = (["", "hdr", "meta", "sm"], ["hdr", "meta"], ["hdr", "meta", "sm"], ["hdr", "meta", "sm"],
             ["hdr", "meta"], ["", "hdr"])
    seen: set[tuple[str, ...]] = set()
    first: set[tuple[str, ...]] = set()

    def named(p: tuple[str, ...]) -> bool:
        return any(q[:len(p)] == p or p[:len(q)] == q for q in seen)

    for name, r in zip(main_blocks, roots, strict=False):
        d = decls.get(name)
        if d is None:
            continue
        params = {p.name: x for p, x in zip(d.params, r, strict=False) if x}
        if isinstance(d, A.ParserDecl):
            start = next((st for st in d.states if st.name == "start"), None)
            prefix = start.stmts if start is not None else []
        else:
            prefix = d.body.stmts if d.body is not None else []
        for st in prefix:
            here: set[tuple[str, ...]] = set()
            if isinstance(st, A.Assign) and st.op is None:
                mentions(st.value, params, here)
                p = place_of(st.target, params)
                if p is not None and p[0] in ("meta", "sm") and not named(p) \
                        and not any(q[:len(p)] == p or p[:len(q)] == q for q in here):
                    first.add(p)
                mentions(st.target, params, here)
            elif isinstance(st, A.CallStmt) and isinstance(st.call.func, A.Member) \
                    and st.call.func.name == "count":
                mentions(st.call, params, here)
            else:
                break
            seen |= here
        mentions(d, params, seen)
    return first


def count_places(node: object, params: dict[str, str], out: dict[tuple[str, ...], int]) -> None:
    """How many times ``node`` (any AST node) names each packet-state place."""
    for p in places_in(node, params):
        out[p] = out.get(p, 0) + 1


def calls_in(node: object, out: list[A.Call]) -> None:
    """Every call inside ``node`` (any AST node)."""
    if isinstance(node, A.Call):
        out.append(node)
    if isinstance(node, list):
        for x in node:
            calls_in(x, out)
    elif hasattr(node, "__dataclass_fields__"):
        for name in node.__dataclass_fields__:
            if name != "loc":
                calls_in(getattr(node, name), out)


def assigns_first(st: A.Stmt, p: tuple[str, ...], params: dict[str, str]) -> bool:
    """``st`` is a plain assignment of the whole of ``p`` that does not read it: a
    fresh value right before it would be overwritten at once (fabric.p4's
    ``meta.trim_enabled = 0;``)."""
    if not (isinstance(st, A.Assign) and st.op is None and isinstance(st.target, (A.Member, A.Name))
            and place_of(st.target, params) == p):
        return False
    read: set[tuple[str, ...]] = set()
    mentions(st.value, params, read)
    return not any(q[:len(p)] == p or p[:len(q)] == q for q in read)


class LateInits:
    """Where a metadata field only one control names gets its fresh value: before
    the statement of that control's apply block that holds all the statements naming
    it (tables and actions they apply and call included), as deep in the if/else
    branches as they all are (nic.p4's fabric-to-host fields, in the branch for
    plane ports; a packet from the host never pays for them)."""

    def __init__(self, d: A.ControlDecl, params: dict[str, str], others: set[tuple[str, ...]]):
        self.params = params
        self.others = others  # what the other blocks name
        self.actions = {x.name: x for x in d.locals if isinstance(x, A.ActionDecl)}
        self.tables = {x.name: x for x in d.locals if isinstance(x, A.TableDecl)}
        self._deep: dict[int, set[tuple[str, ...]]] = {}

    def deep(self, node: object) -> set[tuple[str, ...]]:
        """What ``node`` names, with the tables it applies and the actions it calls."""
        got = self._deep.get(id(node))
        if got is None:
            got = set()
            mentions(node, self.params, got)
            calls: list[A.Call] = []
            calls_in(node, calls)
            for c in calls:
                f = c.func
                if isinstance(f, A.Member) and f.name == "apply" and isinstance(f.obj, A.Name) \
                        and f.obj.name in self.tables:
                    t = self.tables[f.obj.name]
                    got |= self.deep(t.props)  # keys, default action arguments, entries
                    for prop in t.props:
                        if prop.name == "actions" and isinstance(prop.value, list):
                            for item in prop.value:
                                ref = getattr(item, "call", None)
                                ref = ref.func if isinstance(ref, A.Call) else ref
                                if isinstance(ref, A.Name) and ref.name in self.actions:
                                    got |= self.deep(self.actions[ref.name].body)
                elif isinstance(f, A.Name) and f.name in self.actions:
                    got |= self.deep(self.actions[f.name].body)
            self._deep[id(node)] = got
        return got

    @staticmethod
    def related(p: tuple[str, ...], places: set[tuple[str, ...]]) -> bool:
        return any(q[:len(p)] == p or p[:len(q)] == q for q in places)

    def place(self, p: tuple[str, ...], stmts: list[A.Stmt]) -> A.Stmt | None:
        """The statement to give ``p`` its fresh value before (None: nothing names it)."""
        if self.related(p, self.others):
            return None
        at = [st for st in stmts if self.related(p, self.deep(st))]
        if len(at) != 1:
            return at[0] if at else None
        st = at[0]
        if isinstance(st, A.Block):
            return self.place(p, st.stmts) or st
        if isinstance(st, A.If) and not self.related(p, self.deep(st.cond)):
            then = self.related(p, self.deep(st.then))
            other = st.other is not None and self.related(p, self.deep(st.other))
            if then != other:
                branch = st.then if then else st.other
                return self.place(p, branch.stmts if isinstance(branch, A.Block) else [branch]) or st  # type: ignore[list-item]  # other is set when it differs from then
        return st


def shape(node: object) -> object:
    """``node`` without its source locations, to compare two expressions."""
    if isinstance(node, list):
        return [shape(x) for x in node]
    if hasattr(node, "__dataclass_fields__"):
        return (type(node).__name__,) + tuple(
            shape(getattr(node, n)) for n in node.__dataclass_fields__ if n != "loc")
    return node


def first_conjunct(e: A.Expr) -> tuple[A.Expr, A.Expr | None]:
    """``a && b && c`` as (a, b && c); anything else as (e, None)."""
    if isinstance(e, A.Binary) and e.op == "&&":
        first, rest = first_conjunct(e.left)
        return first, (e.right if rest is None else A.Binary(e.loc, "&&", rest, e.right))
    return e, None


CHECKSUM_UPDATES = ("update_checksum", "update_checksum_with_payload")


def has_return(stmts: list[A.Stmt]) -> bool:
    for s in stmts:
        if isinstance(s, A.Return):
            return True
        if isinstance(s, A.Block) and has_return(s.stmts):
            return True
        if isinstance(s, A.If) and (has_return([s.then]) or (s.other is not None and has_return([s.other]))):
            return True
        if isinstance(s, A.Switch) and any(c.body is not None and has_return(c.body.stmts) for c in s.cases):
            return True
    return False
