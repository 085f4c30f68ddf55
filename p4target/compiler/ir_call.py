"""The typed form of a P4 call: what the call checker (typecheck_call.py) makes of a
call of the syntax tree, and what the call generators (emit_call.py, and the fast
path's fast_calls.py) read to write its Python code.

The callee is resolved (the header, stack, table, action or function called) and
the arguments are checked: settled in the order of the callee's parameters
(names, defaults, ``_``), typed and converted to their parameter types, with their
direction. ``type`` is the call's result type (``VoidT`` when it returns nothing).
Nothing in a node is code: an argument kept in a temporary because a later one has
side effects is an ``ir.Spill``, a nested call's result a ``CallResult`` (below).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from p4target.compiler import ir
from p4target.compiler.ir import node
from p4target.compiler.types import StackT, StructT, Type
from p4target.frontend import ast as A
from p4target.frontend.source import Loc

if TYPE_CHECKING:
    from p4target.compiler.entities import ActionInfo, InstanceInfo, SubBlock, TableInfo


@node
class Call:
    """A checked call: its source place, its result type, when the checker knows it
    (``static_assert``) its value, and the values kept in temporaries before it
    (``pre``: an extern's arguments, evaluated in order before the call)."""

    loc: Loc
    type: Type
    const: int | bool | str | None = None
    pre: tuple[ir.Spill, ...] = ()  # an extern's arguments kept in temporaries, written first


@node
class IsValid(Call):
    """``h.isValid()`` of a header, or of a header union (valid when a member is):
    ``header`` is the type of ``base``."""

    base: ir.Expr
    header: StructT


@node
class SetValidity(Call):
    """``h.setValid()`` (``valid``) or ``h.setInvalid()`` of the header ``base`` (an
    l-value of type ``header``); for ``setValid`` of a member ``member`` of a header,
    struct or union ``parent`` (else None): when ``parent`` is a header union, its
    other members become invalid."""

    base: ir.Expr
    header: StructT
    valid: bool
    parent: ir.Expr | None
    member: str


@node
class StackShift(Call):
    """``s.push_front(count)`` or ``s.pop_front(count)`` (``method``) of the header
    stack ``base`` (of type ``stack``); ``count`` is a constant >= 0."""

    base: ir.Expr
    stack: StackT
    method: str
    count: int


@node
class TableApply(Call):
    """``t.apply()`` of the table ``table``: its result (``type``, a table result)
    has ``hit``, ``miss`` and ``action_run``. ``after_terms``: applied inside an
    expression of a statement that evaluated other terms before it (counted by the
    fast path's statements, which give up on such an application)."""

    table: TableInfo
    after_terms: bool = False


@node
class Arg:
    """The argument for parameter ``param`` (direction ``direction``, of type
    ``type``) of an action or function call: ``value`` is what is passed in, already
    converted to ``type`` (an in or inout argument's, or a value kept in a
    temporary; None for an out argument, which starts as the type's fresh value);
    ``place``, for an out or inout argument, is where the result is copied out
    (None for ``_``: the result is dropped); ``pre``: the place's run-time indexes
    kept in temporaries when the argument is evaluated."""

    loc: Loc
    param: str
    direction: str
    type: Type
    value: ir.Expr | None
    place: ir.Expr | None
    pre: tuple[ir.Spill, ...] = ()  # the place's run-time indexes kept in temporaries, written first


@node
class ActionCall(Call):
    """A call of the action or P4 function ``callee`` (``ret``: a function's return
    type, None for an action) by copy-in/copy-out: ``args`` in the order of its
    parameters, defaults and ``_`` settled; ``exits``: an action with results that
    can execute ``exit``, which returns a flag after them."""

    callee: ActionInfo
    ret: Type | None
    args: tuple[Arg, ...]
    exits: bool


@node
class Extract(Call):
    """``pkt.extract(h)`` or ``pkt.extract(h, length)`` into a header of type
    ``header``: the header ``place`` (for an element of a stack, ``stack.next``:
    None), or the next element of the header stack ``stack`` (for a stack of
    header unions, its member ``member``, and ``place`` is ``stack.next.member``);
    ``parent``: the object ``place`` is a member of (when it is one and no stack
    is involved), whose other members become invalid when it is a header union;
    ``length``: the bits of the varbit field ``varbit`` (an integer), for a header
    with one."""

    place: ir.Expr | None
    parent: ir.Expr | None
    stack: ir.Expr | None
    member: str | None
    header: StructT
    length: ir.Expr | None
    varbit: str | None


@node
class SkipHeader(Call):
    """``pkt.extract<T>(_)``: the bytes of the fixed-size header type ``header``
    consumed and dropped."""

    header: StructT


@node
class Advance(Call):
    """``pkt.advance(bits)``: ``bits`` is an integer (a constant: a multiple of 8)."""

    bits: ir.Expr


@node
class Lookahead(Call):
    """``pkt.lookahead<T>()``: the next bits of the packet as a value of ``type``
    (bit<W>, int<W>, a header without varbit field, or a struct of fixed layout)."""


@node
class EmitHeaders(Call):
    """``pkt.emit(x)``: ``value`` is a header, a header stack, or a union or struct
    whose members are themselves emitted in order."""

    value: ir.Expr


@node
class ExternCall(Call):
    """A call of the v1model/core extern function ``name`` or of the method ``name``
    of the extern instance ``instance`` (whose Python name is ``code``): ``args``
    are its checked arguments by position (each converted to what the extern takes;
    None for an out argument and for what is not read); ``out`` is the place an out
    argument's result is stored into (of type ``out_type``); ``member`` an enum
    argument's member (a HashAlgorithm or CloneType); ``bits`` the data of a hash or
    checksum; ``digest`` a digest's name. ``call`` is the call the checker was
    given, on whose identity the fast path's analyses of counters are keyed."""

    call: A.Call
    name: str
    instance: InstanceInfo | None
    code: str
    args: tuple[ir.Expr | None, ...]
    out: ir.Expr | None = None
    out_type: Type | None = None
    member: str | None = None
    bits: ir.Bits | None = None
    digest: str | None = None


@node
class SubApply(Call):
    """``c.apply(args)`` of the control or parser instance ``block``: ``args`` (in the
    order of its parameters, a parser's packet_in left out) are copied into the
    attributes ``attrs`` of a fresh locals object, ``Arg``s as an action's are (an
    in or inout argument's value converted to the parameter's type; the place of
    an out or inout one, copied back after the body)."""

    block: SubBlock
    args: tuple[Arg, ...]
    attrs: tuple[str, ...]


@node
class CallResult(ir.Expr):
    """The value of call ``call``, checked into ``node``: the generator writes the
    call (and the statements it needs) where it writes the expression, once."""

    call: A.Call
    node: Call
