"""Hand-built program models and packet states for unit tests of the runtime parts.

Only the control-plane shape of a program is built here (tables, actions,
externs); packet processing itself is tested through compiled .p4 programs.
"""

from __future__ import annotations

from types import SimpleNamespace

from p4target.model import Action, ActionRef, Extern, Field, KeyField, ProgramModel, Table


def actions() -> tuple[Action, ...]:
    return (
        Action("NoAction", ()),
        Action("Ingress.fwd", (Field("port", 9),)),
        Action("Ingress.set_mac", (Field("mac", 48), Field("port", 9))),
        Action("Ingress.drop", ()),
    )


def table(name: str, keys: list[tuple[str, int, str]], size: int = 1024, **kw) -> Table:
    refs = kw.pop("actions", None) or (
        ActionRef("Ingress.fwd"), ActionRef("Ingress.set_mac"), ActionRef("Ingress.drop"), ActionRef("NoAction"),
    )
    return Table(
        name=name,
        keys=tuple(KeyField(n, w, k) for n, w, k in keys),
        actions=tuple(refs),
        default_action=kw.pop("default_action", "NoAction"),
        size=size,
        **kw,
    )


def model(tables: list[Table], externs: list[Extern] = ()) -> ProgramModel:
    return ProgramModel(source="test.p4", arch="v1model", tables=tuple(tables),
                        actions=actions(), externs=tuple(externs))


def state(packet_length: int = 100) -> SimpleNamespace:
    """A stand-in for the compiler's PacketState: only what tables/externs read."""
    return SimpleNamespace(sm=SimpleNamespace(packet_length=packet_length))
