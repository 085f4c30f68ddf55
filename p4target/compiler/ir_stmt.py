"""The typed form of a P4 statement: what the statement checker (typecheck_stmt.py)
makes of a statement of the syntax tree, and what the statement generator
(emit_stmt.py) reads to write its Python code.

A statement's expressions are typed expressions (ir.py), already converted to the
type the statement needs (an assigned value to its target's, a returned value to
the function's, a switch label to the switched value's). A compound statement
(``Block``, ``If``, a switch's case, a loop) holds its bodies as statements of the
syntax tree: each is checked when the generator reaches it, and each of its
statements is checked then written in turn, so a body is checked at its own place
in the code (a loop's in the loop's scope, which its node holds). Nothing in a
node is code.
"""

from __future__ import annotations

from p4target.compiler import ir, ir_call
from p4target.compiler.ir import node
from p4target.compiler.scope import Scope
from p4target.compiler.types import Type
from p4target.frontend import ast as A
from p4target.frontend.source import Loc


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

    target: ir.Expr
    value: ir.Expr
    widths: tuple[str, str] | None
    pre: tuple[ir.Spill, ...] = ()  # the target's run-time indexes kept in temporaries, written first


@node
class If(Stmt):
    """``if (cond) then else other``: ``cond`` is a bool; ``other`` None without else."""

    cond: ir.Expr
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

    value: ir.Expr | None
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
    init: ir.Expr | None
    init_width: str | None


@node
class ConstDecl(Stmt):
    """``const T name = value;``: ``value`` is a constant of type ``type``; the name
    is in scope from here on, and no code runs."""

    name: str
    type: Type
    value: ir.Expr


@node
class SwitchCase:
    """A case of a switch: the tests of its labels (``None`` for ``default``: a
    constant of the switched value's type, or an action's index in its table) and
    its body (``None``: the labels fall through to the next case's body)."""

    loc: Loc
    labels: tuple[ir.Expr | int | None, ...]
    body: tuple[A.Stmt, ...] | None


@node
class Switch(Stmt):
    """``switch (subject) { cases }``: on a table's ``action_run`` (``action_run``
    is set; the labels are the indexes of the table's actions) or on a value of type
    bit, int, enum or error (the labels are constants of its type)."""

    subject: ir.Expr
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

    cond: ir.Expr


@node
class ForIn(Stmt):
    """``for (T x in ...)``: the loop variable is the new local ``local`` (in
    ``scope``, the loop's, where the body is checked) or, without a type, the
    variable ``existing``; it takes, computed once before the first iteration, the
    values ``lo`` to ``hi`` (both included), or ``items``, converted to its type,
    or a copy of each element of the header stack ``stack``."""

    local: str
    existing: ir.Expr | None
    scope: Scope
    lo: ir.Expr | None
    hi: ir.Expr | None
    items: tuple[ir.Expr, ...] | None
    stack: ir.Expr | None
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

    call: ir_call.Call
