"""AST for the P4_16 subset the embedded target supports.

Nodes are plain dataclasses carrying their source location; the compiler annotates
nothing in place (it keeps its own side tables), so one AST can be compiled twice.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any

from p4target.frontend.source import Loc


@dataclass
class Annotation:
    name: str
    body: str  # raw text between the parentheses, "" when absent
    args: list[object]  # string/int values when the body is a simple list
    loc: Loc


# ---------------------------------------------------------------- types
@dataclass
class TypeRef:
    loc: Loc


@dataclass
class BitsType(TypeRef):
    kind: str  # bit, int, varbit
    width: "Expr | None"  # None for unsized `int`


@dataclass
class NamedType(TypeRef):
    name: str  # bool, error, void, string, match_kind, or a declared name
    args: list[TypeRef] = field(default_factory=list)


@dataclass
class StackType(TypeRef):
    elem: TypeRef
    size: "Expr"


@dataclass
class TupleType(TypeRef):
    elems: list[TypeRef]


@dataclass
class DontCareType(TypeRef):
    pass


# ---------------------------------------------------------------- expressions
@dataclass
class Expr:
    loc: Loc


@dataclass
class IntLit(Expr):
    value: int
    width: int | None
    signed: bool
    text: str


@dataclass
class BoolLit(Expr):
    value: bool


@dataclass
class StrLit(Expr):
    value: str


@dataclass
class Name(Expr):
    name: str
    top: bool = False  # `.name`


@dataclass
class Member(Expr):
    obj: Expr
    name: str


@dataclass
class Index(Expr):
    obj: Expr
    index: Expr


@dataclass
class Slice(Expr):
    obj: Expr
    hi: Expr
    lo: Expr


@dataclass
class Call(Expr):
    func: Expr
    type_args: list[TypeRef]
    args: list["Arg"]


@dataclass
class Arg:
    name: str | None
    value: "Expr | None"  # None for `_` (dont care argument)
    loc: Loc


@dataclass
class Unary(Expr):
    op: str
    operand: Expr


@dataclass
class Binary(Expr):
    op: str
    left: Expr
    right: Expr


@dataclass
class Ternary(Expr):
    cond: Expr
    then: Expr
    other: Expr


@dataclass
class Cast(Expr):
    type: TypeRef
    expr: Expr


@dataclass
class ListExpr(Expr):
    items: list[Expr]


@dataclass
class StructExpr(Expr):
    fields: list[tuple[str, Expr]]


@dataclass
class TypeNameExpr(Expr):
    """A type used where a value is expected, e.g. ``error.NoError`` or ``E.A``'s ``E``."""

    name: str


@dataclass
class DefaultExpr(Expr):
    """``default`` or ``_`` in a keyset."""


@dataclass
class Mask(Expr):
    value: Expr
    mask: Expr


@dataclass
class Range(Expr):
    lo: Expr
    hi: Expr


# ---------------------------------------------------------------- statements
@dataclass
class Stmt:
    loc: Loc


@dataclass
class Block(Stmt):
    stmts: list[Stmt]


@dataclass
class Assign(Stmt):
    target: Expr
    value: Expr
    op: str | None = None  # a compound assignment's operator: "+" for `+=`, "|+|" for `|+|=`


@dataclass
class CallStmt(Stmt):
    call: Call


@dataclass
class If(Stmt):
    cond: Expr
    then: Stmt
    other: Stmt | None


@dataclass
class SwitchCase:
    labels: list[Expr | None]  # None = default
    body: Block | None  # None = fall through to the next case
    loc: Loc


@dataclass
class Switch(Stmt):
    expr: Expr
    cases: list[SwitchCase]


@dataclass
class VarDecl(Stmt):
    type: TypeRef
    name: str
    init: Expr | None
    annotations: list[Annotation]
    is_const: bool = False


@dataclass
class Exit(Stmt):
    pass


@dataclass
class Return(Stmt):
    value: Expr | None


@dataclass
class Empty(Stmt):
    pass


@dataclass
class For(Stmt):
    """``for (init; cond; update) body`` (P4_16 1.2.4): ``cond`` None loops until break."""
    init: list[Stmt]
    cond: Expr | None
    update: list[Stmt]
    body: Stmt


@dataclass
class ForIn(Stmt):
    """``for (T name in iterable) body``: ``iterable`` is a ``Range`` (both ends
    included), a ``ListExpr`` or a header stack, evaluated once before the first
    iteration. ``type`` is None in ``for (name in ...)`` (an existing variable)."""
    type: TypeRef | None
    name: str
    iterable: Expr
    body: Stmt


@dataclass
class Break(Stmt):
    pass


@dataclass
class Continue(Stmt):
    pass


# ---------------------------------------------------------------- declarations
@dataclass
class Param:
    direction: str  # "", in, out, inout
    type: TypeRef
    name: str
    annotations: list[Annotation]
    loc: Loc
    default: Expr | None = None


@dataclass
class Decl:
    name: str
    loc: Loc
    annotations: list[Annotation]


@dataclass
class FieldDecl:
    type: TypeRef
    name: str
    annotations: list[Annotation]
    loc: Loc


@dataclass
class StructLike(Decl):
    kind: str  # header, header_union, struct
    fields: list[FieldDecl]
    type_params: list[str] = field(default_factory=list)  # a generic type: struct S<T> { T f; }


@dataclass
class EnumDecl(Decl):
    underlying: TypeRef | None
    members: list[tuple[str, Expr | None, Loc]]


@dataclass
class ErrorDecl(Decl):
    members: list[tuple[str, Loc]]


@dataclass
class MatchKindDecl(Decl):
    members: list[tuple[str, Loc]]


@dataclass
class TypedefDecl(Decl):
    type: TypeRef
    new_type: bool  # `type` rather than `typedef`


@dataclass
class ConstDecl(Decl):
    type: TypeRef
    value: Expr


@dataclass
class Method:
    name: str
    ret: TypeRef
    type_params: list[str]
    params: list[Param]
    loc: Loc
    annotations: list[Annotation]


@dataclass
class ExternDecl(Decl):
    type_params: list[str]
    methods: list[Method]  # constructors have name == extern name


@dataclass
class ExternFunc(Decl):
    ret: TypeRef
    type_params: list[str]
    params: list[Param]


@dataclass
class ActionDecl(Decl):
    params: list[Param]
    body: Block


@dataclass
class Instance(Decl):
    type: TypeRef
    args: list[Arg]


@dataclass
class KeyElem:
    expr: Expr
    match_kind: str
    annotations: list[Annotation]
    loc: Loc


@dataclass
class ActionListItem:
    call: Expr  # Name or Call
    annotations: list[Annotation]
    loc: Loc


@dataclass
class EntryDecl:
    keys: list[Expr]
    action: Expr
    priority: Expr | None
    annotations: list[Annotation]
    loc: Loc


@dataclass
class TableProp:
    name: str
    value: Any  # list[KeyElem] | list[ActionListItem] | list[EntryDecl] | Expr, by the property's name
    is_const: bool
    annotations: list[Annotation]
    loc: Loc


@dataclass
class TableDecl(Decl):
    props: list[TableProp]


@dataclass
class SelectCase:
    keyset: Expr  # ListExpr for tuples
    state: str
    loc: Loc


@dataclass
class Transition:
    loc: Loc
    state: str | None  # direct transition
    select: list[Expr] | None = None
    cases: list[SelectCase] = field(default_factory=list)


@dataclass
class ParserState(Decl):
    stmts: list[Stmt]
    transition: Transition | None


@dataclass
class ParserDecl(Decl):
    type_params: list[str]
    params: list[Param]
    ctor_params: list[Param]
    locals: list[object]
    states: list[ParserState]
    is_type: bool = False


@dataclass
class ControlDecl(Decl):
    type_params: list[str]
    params: list[Param]
    ctor_params: list[Param]
    locals: list[object]
    body: Block | None
    is_type: bool = False


@dataclass
class PackageDecl(Decl):
    type_params: list[str]
    params: list[Param]


@dataclass
class FunctionDecl(Decl):
    ret: TypeRef
    params: list[Param]
    body: Block


@dataclass
class ValueSetDecl(Decl):
    type: TypeRef
    size: Expr


@dataclass
class Program:
    decls: list[object]


def walk(node: object) -> Iterator[object]:
    """Every node under ``node`` (itself included), depth first in source order: the
    dataclass nodes and the lists and tuples that hold them, locations left out."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, (list, tuple)):
            stack.extend(reversed(n))
            continue
        if not is_dataclass(n) or isinstance(n, type) or isinstance(n, Loc):
            continue
        yield n
        stack.extend(reversed([getattr(n, f.name) for f in fields(n)]))
