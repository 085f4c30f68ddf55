"""The typed IR of the compiler: what the checkers (typecheck_expr.py,
typecheck_stmt.py, typecheck_call.py and the checkers they compose) make of the
syntax tree, and what the generators (emit_expr.py, emit_stmt.py, emit_call.py, and
the fast path's fast_place_code.py, fast_statements.py, fast_calls.py) read to write
Python code. Nothing in a node is code.

**Expressions.** Every node carries its resolved P4 type, its source place and, when
it is known at compile time, its value (``const``; a node folded to a value is a
``Const``). Names carry the symbol they resolve to; members, indexes and slices the
part they select; an unsized literal beside a sized operand has already become a
``Const`` of that operand's type. A value kept in a temporary because a later operand
has side effects (``Spill``), a short-circuit or conditional with side effects
(``ShortCircuit``, ``Conditional``) and a call's result (``CallResult``, which holds
the call's node) are nodes the generator writes.

**Calls.** The callee is resolved (the header, stack, table, action, function,
extern or sub-block called) and the arguments are checked: settled in the order of
the callee's parameters (names, defaults, ``_``), typed and converted to their
parameter types, with their direction. ``type`` is the call's result type
(``VoidT`` when it returns nothing). An argument kept in a temporary because a later
one has side effects is a ``Spill``.

**Statements.** A statement's expressions are typed expressions, already converted
to the type the statement needs (an assigned value to its target's, a returned value
to the function's, a switch label to the switched value's). A compound statement
(``Block``, ``If``, a switch's case, a loop) holds its bodies as statements of the
syntax tree: each is checked when the generator reaches it, and each of its
statements is checked then written in turn, so a body is checked at its own place in
the code (a loop's in the loop's scope, which its node holds).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar, dataclass_transform

from p4target.compiler.scope import Scope, Sym
from p4target.compiler.types import StackT, StructT, Type
from p4target.frontend import ast as A
from p4target.frontend.source import Loc

if TYPE_CHECKING:
    from p4target.compiler.entities import ActionInfo, InstanceInfo, SubBlock, TableInfo

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

# -- calls -------------------------------------------------------------------------

@node
class Call:
    """A checked call: its source place, its result type, when the checker knows it
    (``static_assert``) its value, and the values kept in temporaries before it
    (``pre``: an extern's arguments, evaluated in order before the call)."""

    loc: Loc
    type: Type
    const: int | bool | str | None = None
    pre: tuple[Spill, ...] = ()  # an extern's arguments kept in temporaries, written first


@node
class IsValid(Call):
    """``h.isValid()`` of a header, or of a header union (valid when a member is):
    ``header`` is the type of ``base``."""

    base: Expr
    header: StructT


@node
class SetValidity(Call):
    """``h.setValid()`` (``valid``) or ``h.setInvalid()`` of the header ``base`` (an
    l-value of type ``header``); for ``setValid`` of a member ``member`` of a header,
    struct or union ``parent`` (else None): when ``parent`` is a header union, its
    other members become invalid."""

    base: Expr
    header: StructT
    valid: bool
    parent: Expr | None
    member: str


@node
class StackShift(Call):
    """``s.push_front(count)`` or ``s.pop_front(count)`` (``method``) of the header
    stack ``base`` (of type ``stack``); ``count`` is a constant >= 0."""

    base: Expr
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
    value: Expr | None
    place: Expr | None
    pre: tuple[Spill, ...] = ()  # the place's run-time indexes kept in temporaries, written first


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

    place: Expr | None
    parent: Expr | None
    stack: Expr | None
    member: str | None
    header: StructT
    length: Expr | None
    varbit: str | None


@node
class SkipHeader(Call):
    """``pkt.extract<T>(_)``: the bytes of the fixed-size header type ``header``
    consumed and dropped."""

    header: StructT


@node
class Advance(Call):
    """``pkt.advance(bits)``: ``bits`` is an integer (a constant: a multiple of 8)."""

    bits: Expr


@node
class Lookahead(Call):
    """``pkt.lookahead<T>()``: the next bits of the packet as a value of ``type``
    (bit<W>, int<W>, a header without varbit field, or a struct of fixed layout)."""


@node
class EmitHeaders(Call):
    """``pkt.emit(x)``: ``value`` is a header, a header stack, or a union or struct
    whose members are themselves emitted in order."""

    value: Expr


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
    args: tuple[Expr | None, ...]
    out: Expr | None = None
    out_type: Type | None = None
    member: str | None = None
    bits: Bits | None = None
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
class CallResult(Expr):
    """The value of call ``call``, checked into ``node``: the generator writes the
    call (and the statements it needs) where it writes the expression, once."""

    call: A.Call
    node: Call

# -- statements --------------------------------------------------------------------

@node
class Stmt:
    """A checked statement: its source place."""

    loc: Loc


@node
class Empty(Stmt):
    """``;``: nothing to run."""


@node
class Block(Stmt):
    """``{ ... }``: its statements, in a scope of their own."""

    body: tuple[A.Stmt, ...]


@node
class Assign(Stmt):
    """``target = value`` (``target op= value`` is ``target = target op value``, its
    run-time indexes kept in temporaries first): ``value`` has the target's type;
    ``widths``: for a varbit value, where the target's current width is kept and
    where the value's is; ``pre``: the run-time indexes kept in temporaries."""

    target: Expr
    value: Expr
    widths: tuple[str, str] | None
    pre: tuple[Spill, ...] = ()  # the target's run-time indexes kept in temporaries, written first


@node
class If(Stmt):
    """``if (cond) then else other``: ``cond`` is a bool; ``other`` None without else."""

    cond: Expr
    then: tuple[A.Stmt, ...]
    other: tuple[A.Stmt, ...] | None


@node
class Exit(Stmt):
    """``exit``, in a control or an action."""


@node
class Return(Stmt):
    """``return`` or ``return value``: ``value`` (a function's, converted to its
    return type; ``None`` for void) when ``in_function``; ``outs``: the action's or
    function's out parameters, returned with it (copy-out)."""

    value: Expr | None
    in_function: bool
    outs: tuple[str, ...]


@node
class VarDecl(Stmt):
    """``T name [= init];``: the local ``local`` of type ``type``, set to ``init``
    (converted to ``type``) or, without one, to the type's fresh value; a varbit
    variable also keeps its current width (``init_width``: where the initial value's
    is kept, when it has one)."""

    name: str
    type: Type
    local: str
    init: Expr | None
    init_width: str | None


@node
class ConstDecl(Stmt):
    """``const T name = value;``: ``value`` is a constant of type ``type``; the name
    is in scope from here on, and no code runs."""

    name: str
    type: Type
    value: Expr


@node
class SwitchCase:
    """A case of a switch: the tests of its labels (``None`` for ``default``: a
    constant of the switched value's type, or an action's index in its table) and
    its body (``None``: the labels fall through to the next case's body)."""

    loc: Loc
    labels: tuple[Expr | int | None, ...]
    body: tuple[A.Stmt, ...] | None


@node
class Switch(Stmt):
    """``switch (subject) { cases }``: on a table's ``action_run`` (``action_run``
    is set; the labels are the indexes of the table's actions) or on a value of type
    bit, int, enum or error (the labels are constants of its type)."""

    subject: Expr
    action_run: bool
    cases: tuple[SwitchCase, ...]


@node
class For(Stmt):
    """``for (init; cond; update) body``, in the loop's scope ``scope``: a loop whose
    test (``cond``, None: none) is checked once its initial statements, which declare
    what it reads, are compiled; the update also runs before each ``continue``."""

    scope: Scope
    init: tuple[A.Stmt, ...]
    cond: A.Expr | None
    update: tuple[A.Stmt, ...]
    body: tuple[A.Stmt, ...]


@node
class LoopTest(Stmt):
    """The test of a ``for`` loop, at the start of each iteration: ``cond`` is a bool."""

    cond: Expr


@node
class ForIn(Stmt):
    """``for (T x in ...)``: the loop variable is the new local ``local`` (in
    ``scope``, the loop's, where the body is checked) or, without a type, the
    variable ``existing``; it takes, computed once before the first iteration, the
    values ``lo`` to ``hi`` (both included), or ``items``, converted to its type,
    or a copy of each element of the header stack ``stack``."""

    local: str
    existing: Expr | None
    scope: Scope
    lo: Expr | None
    hi: Expr | None
    items: tuple[Expr, ...] | None
    stack: Expr | None
    body: tuple[A.Stmt, ...]


@node
class Break(Stmt):
    """``break`` or ``continue`` (``word``) in a loop; a ``continue`` in a three-clause
    ``for`` first runs the loop's update statements (``update``) in its scope."""

    word: str
    update: tuple[A.Stmt, ...] | None
    scope: Scope | None


@node
class CallStmt(Stmt):
    """A method-call statement: the typed call (its value, if any, is dropped)."""

    call: Call
