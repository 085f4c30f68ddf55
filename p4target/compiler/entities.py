"""What the compiler records about actions, extern instances and tables, and how
P4 annotations (``@name`` above all) turn declarations into P4Info names; the
controls and parsers instantiated in a block (``SubBlock``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from p4target import model as M
from p4target.compiler.types import ExternT, Type
from p4target.frontend import ast as A
from p4target.frontend.source import Loc, error

EXTERN_KINDS = ("counter", "direct_counter", "meter", "direct_meter", "register",
                 "action_profile", "action_selector")


@dataclass
class ActionInfo:
    p4name: str  # qualified model name
    local: str
    decl: A.ActionDecl
    pyfunc: str
    control: str | None
    empty: bool = False  # generated body does nothing (e.g. NoAction): tables skip the call
    lines: list[str] | None = None  # the generated function (def, docstring, body)
    scope: object = None  # the Scope it was declared in (the fast path compiles it in place)


@dataclass
class InstanceInfo:
    kind: str
    name: str  # model name
    pyname: str
    elem_type: Type | None = None
    extern: M.Extern | None = None


@dataclass
class TableInfo:
    name: str
    local: str
    pyfunc: str
    actions: list[tuple[str, ActionInfo]] = field(default_factory=list)  # (local name, info)
    lines: list[str] | None = None  # the generated helper (def, docstring, body)
    model: M.Table | None = None
    key_code: str = "()"  # the key tuple (and selector tuple or "None"), as compiled
    sel_code: str = "None"
    keys_pure: bool = True  # computing the keys emitted no statement
    key_parts: list[str] = field(default_factory=list)  # the match key's values, as compiled
    sel_parts: list[str] = field(default_factory=list)  # the selector key's values, as compiled
    # actions whose directional parameters the action list binds: their arguments
    bound: dict[str, list[A.Expr]] = field(default_factory=dict)

    def action_index(self, name: str, loc: Loc) -> int:
        for i, (n, _) in enumerate(self.actions):
            if n == name:
                return i
        raise error(loc, f"action '{name}' is not in the actions of table {self.name}")


def annos_dict(annos: list[A.Annotation]) -> dict[str, list[object]]:
    return {a.name: a.args for a in annos}


def anno_strs(annos: list[A.Annotation]) -> dict[str, str]:
    """Annotations as the model keeps them: name -> raw body text."""
    out = {}
    for a in annos:
        if a.name == "name":
            continue
        out[a.name] = a.body.strip('"') if len(a.args) == 1 and isinstance(a.args[0], str) else a.body
    return out


def name_anno(annos: list[A.Annotation]) -> str | None:
    for a in annos:
        if a.name == "name" and a.args and isinstance(a.args[0], str):
            return a.args[0]
    return None


def qualify(prefix: str | None, local: str, annos: list[A.Annotation]) -> str:
    """The P4Info name p4c gives a declaration: @name wins (a leading '.' is absolute)."""
    n = name_anno(annos)
    if n is not None:
        if n.startswith("."):
            return n[1:]
        local = n
    return f"{prefix}.{local}" if prefix else local


@dataclass
class SubBlock:
    """One compiled instance of a control or parser inside another block."""
    kind: str  # "control" or "parser"
    path: str  # P4 instance path, e.g. MyIngress.c
    decl: A.ControlDecl | A.ParserDecl
    entry: str  # Python apply function (control) or start state (parser)
    locals_cls: str | None
    params: list[tuple[A.Param, Type, str]] = field(default_factory=list)  # (param, type, attribute)


def is_packet_in(t: Type) -> bool:
    return isinstance(t, ExternT) and t.name == "packet_in"
