"""The typed form of a P4 expression: what the type checker (typecheck_expr.py) makes
of an expression of the syntax tree, and what the generators (emit_expr.py, and the
fast path's fast_place_code.py) read to write its Python code.

Every node carries its resolved P4 type, its source place and, when it is known at
compile time, its value (``const``; a node folded to a value is a ``Const``). Names
carry the symbol they resolve to; members, indexes and slices the part they select;
an unsized literal beside a sized operand has already become a ``Const`` of that
operand's type. Nothing in a node is code: a value kept in a temporary because a
later operand has side effects (``Spill``), a short-circuit or conditional with
side effects (``ShortCircuit``, ``Conditional``) and a call's result
(``ir_call.CallResult``, which holds the call's node) are nodes the generator
writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar, dataclass_transform

from p4target.compiler.scope import Sym
from p4target.compiler.types import StackT, StructT, Type
from p4target.frontend.source import Loc

_N = TypeVar("_N")


@dataclass_transform(frozen_default=True, kw_only_default=True)
def node(cls: type[_N]) -> type[_N]:
    """A typed node: a slotted dataclass with keyword fields, frozen for the type
    checker (mypy refuses an assignment to a field of a node), built without the
    run-time guard of ``frozen=True``, which makes every node slower to build."""
    return dataclass(slots=True, kw_only=True)(cls)


@node
class Expr:
    """A typed expression: its P4 type, its place, its value when known at compile time."""

    type: Type
    loc: Loc
    const: int | bool | str | None = None


@node
class Const(Expr):
    """A literal, a constant's name, an enum or error member, or an expression folded
    to its value (``const`` is set)."""


@node
class TypeName(Expr):
    """A type used as an expression: the object of ``error.X`` or ``E.X``, or a
    ``TypeNameExpr`` (``sym`` is a symbol of kind ``type``)."""

    sym: Sym


@node
class Ref(Expr):
    """A name resolved to ``sym``: a variable or parameter (kind ``var``), or an
    object that is not a value (a table, an extern instance, the packet...)."""

    sym: Sym


@node
class Field(Expr):
    """Field ``name`` of a header, header union or struct ``base`` (of type ``parent``)."""

    base: Expr
    name: str
    parent: StructT


@node
class StackMember(Expr):
    """``next``, ``last``, ``lastIndex`` or ``nextIndex`` of header stack ``base``
    (``size`` is a ``Const``); ``in_parser``: read in a parser state."""

    base: Expr
    name: str
    stack: StackT
    in_parser: bool


@node
class TableResultMember(Expr):
    """``hit``, ``miss`` or ``action_run`` of a table's apply result ``base``."""

    base: Expr
    name: str


@node
class MethodRef(Expr):
    """Method ``name`` of a table, extern instance or packet ``base`` (called by the
    statement compiler)."""

    base: Expr
    name: str


@node
class TupleIndex(Expr):
    """Element ``index`` of a tuple ``base``."""

    base: Expr
    index: int


@node
class StackIndex(Expr):
    """Element ``index`` of header stack ``base``: ``at`` is the element when the
    index is a compile-time constant (checked in range), else None."""

    base: Expr
    index: Expr
    at: int | None
    stack: StackT


@node
class Slice(Expr):
    """Bits ``hi`` down to ``lo`` of ``base`` (a bit<W>, int<W> or constant int)."""

    base: Expr
    hi: int
    lo: int


@node
class Unary(Expr):
    """``!x``, ``~x`` or ``-x``."""

    op: str
    operand: Expr


@node
class Binary(Expr):
    """``left op right`` on operands unified to ``operand_type``: arithmetic, bitwise,
    saturating, shift (the right operand keeps its own type), concatenation,
    comparison, and ``&&``/``||`` whose right operand has no side effects."""

    op: str
    left: Expr
    right: Expr
    operand_type: Type


@node
class CompositeEq(Expr):
    """``==``/``!=`` on two headers, unions, stacks or structs of type ``operand_type``."""

    op: str
    left: Expr
    right: Expr
    operand_type: StructT | StackT


@node
class Ternary(Expr):
    """``cond ? then : other`` whose branches have no side effects."""

    cond: Expr
    then: Expr
    other: Expr


@node
class Cast(Expr):
    """``(type) operand`` (an explicit conversion to this node's type)."""

    operand: Expr


@node
class Convert(Expr):
    """``operand`` converted implicitly to this node's type (assignment, argument):
    ``how`` is ``same`` (the value as it is), ``copy`` (a header, struct or stack:
    its own copy) or ``tuple_copy`` (a tuple holding headers or stacks)."""

    operand: Expr
    how: str


@node
class ListValue(Expr):
    """``{a, b, ...}`` as a tuple value."""

    items: tuple[Expr, ...]


@node
class TupleBuild(Expr):
    """A list expression given a tuple type: its items converted to the element types."""

    items: tuple[Expr, ...]


@node
class StructBuild(Expr):
    """A list or ``{f = v}`` expression given a struct or header type: its field
    values, converted to the field types, in the type's field order."""

    fields: tuple[Expr, ...]
    struct: StructT


@node
class Spill(Expr):
    """``value`` evaluated before what comes after it, which has side effects: the
    generator writes it into a temporary where it writes this node (once), a header,
    struct or stack as its own copy. ``how`` says what stays as it is: ``value`` (an
    operand) a value that is then a constant; ``item`` (an item of a list converted
    to a struct or tuple type, not copied) and ``arg`` (an action's argument; None:
    an out argument's fresh value) an integer literal; ``name`` (a run-time index of
    an l-value, an extern's argument, which the statement checker names) nothing."""

    value: Expr | None
    how: str = "value"


@node
class ShortCircuit(Expr):
    """``left && right`` / ``left || right`` whose right operand has side effects:
    the generator keeps ``left`` in a temporary and evaluates ``right`` (and its
    effects) into it only when ``left`` does not decide."""

    op: str
    left: Expr
    right: Expr


@node
class Conditional(Expr):
    """``cond ? then : other`` with side effects in a branch: the generator writes
    an if block that evaluates only the chosen branch into a temporary (``then``
    and ``other`` have this node's type)."""

    cond: Expr
    then: Expr
    other: Expr


@node
class AnyKey(Expr):
    """``default`` or ``_`` in a select case or table entry: any value of the key."""


@node
class MaskKey(Expr):
    """``value &&& mask`` in a select case or table entry, both constants converted to
    the key's type (this node's; a signed value as it is)."""

    value: int
    mask: int


@node
class RangeKey(Expr):
    """``lo .. hi`` in a select case or table entry, both constants converted to the
    key's type (this node's; a signed value as it is)."""

    lo: int
    hi: int


@node
class Bits:
    """A value as a bit string (hash, checksum and digest data): ``parts`` are the
    values concatenated MSB first (leaves of type bit<W>, int<W>, bool, serializable
    enum or varbit); ``varbit_of`` gives, for a varbit part, the header holding its
    length (else None)."""

    loc: Loc
    parts: tuple[Expr, ...]
    varbit_of: tuple[Expr | None, ...]
