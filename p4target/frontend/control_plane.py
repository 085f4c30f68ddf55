"""Which actions p4c puts in a program's P4Info, decided from the front-end's AST.

``p4c-bm2-ss --p4runtime-files`` writes the P4Info from the output of p4c's front end
(before the BMv2 mid end), and that front end decides which actions exist:

- ``CreateBuiltins`` gives every table without a ``default_action`` the property
  ``default_action = NoAction()`` and lists ``NoAction`` (``@defaultonly``) in it;
- ``RemoveAllUnusedDeclarations`` drops every action that no kept code names
  (transitively: an action named only by an unused action goes too);
- ``InlineActions`` replaces each action call inside an action by the callee's body,
  so after it a top-level action is named by a control only from its tables and its
  apply block, not from the bodies of its actions;
- ``LocalizeAllActions`` copies each top-level action into every control that names
  it, in front of the control's own declarations, in the order of first use.

The P4Info then lists, control by control in ``V1Switch`` order, every action declared
in the control (copied ones first), each name once, leaving out ``@hidden`` actions.
So an action called directly from an apply block is there although no table lists
it, and so is a control's action called only from another of its actions; a
top-level action called only from action bodies is not.

Two simplifications (the first is in docs/p4runtime.md): every table counts as used
(p4c drops a table that is never applied; the embedded target keeps it, so its
actions stay too), and a name is resolved as an action of the control first, then of
the program, without looking at variables that could shadow it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterator

from p4target.frontend import ast as A

_NO_ACTION = "NoAction"
# V1Switch's parameters (v1model.p4): named arguments are taken in this order.
_V1SWITCH_PARAMS = ("p", "vr", "ig", "eg", "ck", "dep")


def names_in(node: object) -> Iterator[str]:
    """Every plain name (``A.Name``) in an AST subtree, in source order."""
    if isinstance(node, A.Name):
        yield node.name
        return
    if isinstance(node, (list, tuple)):
        for item in node:
            yield from names_in(item)
        return
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        for f in dataclasses.fields(node):
            if f.name in ("loc", "annotations"):
                continue
            yield from names_in(getattr(node, f.name))


def _hidden(decl: A.ActionDecl) -> bool:
    return any(a.name == "hidden" for a in decl.annotations)


def _main_controls(program: A.Program) -> list[A.ControlDecl]:
    """The controls V1Switch runs, in its argument order (unknown names are skipped:
    the compiler reports them)."""
    controls = {d.name: d for d in program.decls if isinstance(d, A.ControlDecl) and not d.is_type}
    out: list[A.ControlDecl] = []
    for d in program.decls:
        if isinstance(d, A.Instance) and d.name == "main":
            args = sorted(d.args, key=lambda a: _V1SWITCH_PARAMS.index(a.name)
                          if a.name in _V1SWITCH_PARAMS else -1)
            for arg in args:
                v = arg.value
                if isinstance(v, A.Call) and isinstance(v.func, A.Name) and v.func.name in controls:
                    out.append(controls[v.func.name])
    return out


def _table_names(t: A.TableDecl) -> list[str]:
    """Names a table refers to, with p4c's implicit ``NoAction`` when it has no default."""
    names = list(names_in(t.props))
    if not any(p.name == "default_action" for p in t.props):
        names.append(_NO_ACTION)
    return names


def control_actions(program: A.Program, control: A.ControlDecl, prefix: str | None = None,
                    depth: int = 0) -> list[str]:
    """P4Info names of the actions p4c's front end leaves in ``control`` (whose
    instance path is ``prefix``, its name for a V1Switch block), in its order, then
    those of the controls it instantiates (``C() c;``: prefix ``<prefix>.c``)."""
    prefix = prefix or control.name
    # The compiler's naming rule (@name, leading '.'); imported here because the
    # compiler imports this module.
    from p4target.compiler.entities import qualify

    top = {d.name: d for d in program.decls if isinstance(d, A.ActionDecl)}
    local = {d.name: d for d in control.locals if isinstance(d, A.ActionDecl)}
    # Names outside action bodies: the tables (in declaration order), then the apply block.
    outside: list[str] = []
    for d in control.locals:
        if isinstance(d, A.TableDecl):
            outside.extend(_table_names(d))
    if control.body is not None:
        outside.extend(names_in(control.body))
    # Reachable local actions (an action named only by an unused one is removed too).
    used_local: set[str] = set()
    work = [n for n in outside if n in local]
    while work:
        n = work.pop()
        if n in used_local:
            continue
        used_local.add(n)
        work.extend(m for m in names_in(local[n].body) if m in local)
    copied: list[str] = []  # top-level actions, in the order of first use
    for n in outside:
        if n not in local and n in top and n not in copied:
            copied.append(n)
    names = [qualify(None, top[n].name, top[n].annotations) for n in copied if not _hidden(top[n])]
    names += [qualify(prefix, d.name, d.annotations) for d in control.locals
              if isinstance(d, A.ActionDecl) and d.name in used_local and not _hidden(d)]
    controls = {d.name: d for d in program.decls if isinstance(d, A.ControlDecl) and not d.is_type}
    for d in control.locals:
        if isinstance(d, A.Instance) and isinstance(d.type, A.NamedType) and d.type.name in controls \
                and depth < 16:  # the compiler refuses recursive instantiation
            names += control_actions(program, controls[d.type.name], qualify(prefix, d.name, d.annotations),
                                     depth + 1)
    return names


def p4info_action_names(program: A.Program, declared: Collection[str],
                        listed: list[str]) -> list[str]:
    """The actions of the P4Info, in p4c's order: those p4c keeps (see the module
    docstring) that the compiler ``declared``, then any action a table ``listed`` that
    the rule above missed (so every action reference of a table resolves)."""
    out: list[str] = []
    for control in _main_controls(program):
        for name in control_actions(program, control):
            if name in declared and name not in out:
                out.append(name)
    out.extend(n for n in listed if n not in out)
    return out
