"""Warnings p4c-bm2-ss gives where BMv2 does not do what the program text says.

The embedded target stands in for BMv2, so a program that would behave differently
on BMv2 is flagged here with the warning p4c-bm2-ss prints for it. The checks work on
the front-end's AST; the compiler appends their lines to its own warnings, which
``p4target compile`` prints.

- A ``default_action`` on a table whose ``implementation`` is an action profile or
  selector: p4c's BMv2 back end warns "Target does not support default_action for T
  (due to action profiles)" and writes no default entry into the BMv2 JSON, so on a
  miss BMv2 runs no action (until a controller sets a default member or group); the
  embedded target runs the written default action. A table without ``default_action``
  is not flagged: p4c's implicit default there is ``NoAction``, which does nothing on
  either target.
"""

from __future__ import annotations

from p4target.frontend import ast as A

_IMPLEMENTATIONS = ("action_profile", "action_selector")


def _instance_kinds(control: A.ControlDecl) -> dict[str, str]:
    """Instance name -> extern type name, for the control's own instances."""
    out: dict[str, str] = {}
    for d in control.locals:
        if isinstance(d, A.Instance) and isinstance(d.type, A.NamedType):
            out[d.name] = d.type.name
    return out


def _is_profile(value: object, kinds: dict[str, str]) -> bool:
    if isinstance(value, A.Name):
        return kinds.get(value.name) in _IMPLEMENTATIONS
    # an inline instance: implementation = action_profile(32w128)
    return (isinstance(value, A.Call) and isinstance(value.func, A.Name)
            and value.func.name in _IMPLEMENTATIONS)


def indirect_default_actions(control: A.ControlDecl) -> list[str]:
    """One warning per table of ``control`` with both a profile/selector and a default_action."""
    from p4target.compiler.entities import qualify  # the compiler imports this package

    kinds = _instance_kinds(control)
    out: list[str] = []
    for t in control.locals:
        if not isinstance(t, A.TableDecl):
            continue
        props = {p.name: p for p in t.props}
        impl, default = props.get("implementation"), props.get("default_action")
        if impl is None or default is None or not _is_profile(impl.value, kinds):
            continue
        name = qualify(control.name, t.name, t.annotations)
        out.append(f"{t.loc}: table {name}: BMv2 ignores the default_action of a table with an "
                   f"action profile or selector (p4c-bm2-ss: \"Target does not support "
                   f"default_action for {name} (due to action profiles)\"): on a miss BMv2 runs "
                   "no action while the embedded target runs it; remove default_action and "
                   f"handle the miss in the apply block (if (!{t.name}.apply().hit) ...)")
    return out


def bmv2_warnings(program: A.Program) -> tuple[str, ...]:
    """Every warning of this module for ``program``, in source order."""
    out: list[str] = []
    for d in program.decls:
        if isinstance(d, A.ControlDecl) and not d.is_type:
            out.extend(indirect_default_actions(d))
    return tuple(out)
