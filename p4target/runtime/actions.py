"""Checking an action call the control plane asks for against the program model.

Tables, action profile members and default actions all name an action with
parameter values; this is the one place that turns ``("MyIngress.fwd",
{"port": 2})`` into the argument tuple the generated code expects, or says
precisely what is wrong with it.
"""

from __future__ import annotations

from typing import Mapping

from p4target.errors import EntryError
from p4target.model import Action, ProgramModel


def find_action(model: ProgramModel, name: str, where: str) -> Action:
    try:
        return model.action(name)
    except KeyError:
        known = ", ".join(a.name for a in model.actions)
        raise EntryError("invalid", f"{where}: unknown action {name!r}; known actions: {known}") from None


def action_args(action: Action, params: Mapping[str, int] | None, where: str) -> tuple[int, ...]:
    """Argument values in parameter order, each checked against its bit width."""
    params = dict(params or {})
    names = [p.name for p in action.params]
    extra = sorted(set(params) - set(names))
    if extra:
        raise EntryError(
            "invalid",
            f"{where}: action {action.name} has no parameter {extra[0]!r}; "
            f"its parameters are: {', '.join(names) or '(none)'}",
        )
    args = []
    for p in action.params:
        if p.name not in params:
            raise EntryError("invalid", f"{where}: action {action.name} needs a value for parameter {p.name!r}")
        value = params[p.name]
        if isinstance(value, bool) or not isinstance(value, int):
            raise EntryError(
                "invalid", f"{where}: parameter {action.name}.{p.name} must be an integer, got {value!r}"
            )
        if value < 0 or value >= (1 << p.bitwidth):
            raise EntryError(
                "invalid",
                f"{where}: value {value:#x} does not fit parameter {action.name}.{p.name} "
                f"(bit<{p.bitwidth}>)",
            )
        args.append(value)
    return tuple(args)


def args_to_params(action: Action, args: tuple[int, ...]) -> dict[str, int]:
    return {p.name: v for p, v in zip(action.params, args, strict=False)}
