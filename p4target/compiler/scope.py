"""Symbols and nested scopes used while resolving names and generating code."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from p4target.compiler.types import Type
from p4target.frontend.source import Loc, error


@dataclass
class Sym:
    """A name in scope.

    kind: var (a value with Python code ``code``), const (compile-time value),
    instance (extern object), table, action, packet_in, packet_out, type, parser,
    control, function (extern function).
    """

    kind: str
    type: Type | None
    code: str = ""
    const: object = None
    # what the name stands for; its class follows ``kind`` (an InstanceInfo, a
    # TableInfo, an ActionInfo, a declaration...), so it is not narrowed here
    obj: Any = None
    param: bool = False  # a parameter of a block, action or function


@dataclass
class Scope:
    parent: "Scope | None" = None
    names: dict[str, Sym] = field(default_factory=dict)

    def lookup(self, name: str) -> Sym | None:
        s: Scope | None = self
        while s is not None:
            sym = s.names.get(name)
            if sym is not None:
                return sym
            s = s.parent
        return None

    def define(self, name: str, sym: Sym, loc: Loc) -> None:
        """Declare ``name`` here; a second declaration in the same scope is an error (p4c)."""
        if name in self.names:
            raise error(loc, f"'{name}' is already declared in this scope; rename one of them")
        self.names[name] = sym

    def check_not_param(self, name: str, loc: Loc) -> None:
        """Refuse a local declaration that would hide a parameter (an error in p4c)."""
        sym = self.lookup(name)
        if sym is not None and sym.param:
            raise error(loc, f"declaration of '{name}' shadows a parameter '{name}'; rename the local")

    def child(self) -> "Scope":
        return Scope(self)
