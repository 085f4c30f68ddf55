"""The program model: what a compiled P4 program declares to the outside world.

The compiler (``p4target.compiler``) produces one ``ProgramModel`` per program. The
runtime (``p4target.runtime``) builds its tables and externs from it, the P4Info
generator (``p4target.p4info``) turns it into ``p4.config.v1.P4Info``, and the
P4Runtime server validates requests against it. Names are the fully qualified names
p4c would put in the P4Info (``MyIngress.ipv6_lpm``, ``NoAction``,
``hdr.ipv6.dst_addr``), after ``@name`` annotations are applied. Ids are not part of
the model: the P4Info generator assigns them, so one naming scheme serves every user.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from p4target.errors import P4Error

# Match kinds a table key may use (v1model adds lpm/ternary/range/optional/selector to core's).
MATCH_KINDS = ("exact", "lpm", "ternary", "range", "optional", "selector")


@dataclass(frozen=True)
class SourceLocation:
    """Where a declaration is in the source, for error messages and P4Info docs."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


@dataclass(frozen=True)
class Field:
    """A named bit field of a header, struct or parameter list."""

    name: str
    bitwidth: int
    annotations: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class KeyField:
    """One key element of a table. ``name`` is the key expression as p4c names it."""

    name: str
    bitwidth: int
    match_kind: str
    annotations: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Action:
    """An action with its control-plane (directionless) parameters."""

    name: str
    params: tuple[Field, ...]
    annotations: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ActionRef:
    """An action as listed in a table: scope is ``all``, ``table_only`` or ``default_only``."""

    name: str
    scope: str = "all"
    annotations: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class KeyMatch:
    """One key element of a const entry, in the form of a runtime match value."""

    kind: str  # exact, lpm, ternary, range, optional, dontcare
    value: int = 0
    mask_or_prefix_or_high: int = 0


@dataclass(frozen=True)
class ConstEntry:
    """A ``const entries`` element: key matches in key order, action call, priority."""

    matches: tuple[KeyMatch, ...]
    action: str
    args: tuple[int, ...]
    priority: int | None = None


@dataclass(frozen=True)
class Table:
    name: str
    keys: tuple[KeyField, ...]
    actions: tuple[ActionRef, ...]
    default_action: str
    default_args: tuple[int, ...] = ()
    default_is_const: bool = False
    const_entries: tuple[ConstEntry, ...] | None = None  # None: no ``const entries``
    size: int = 1024
    implementation: str | None = None  # action_profile / action_selector instance name
    direct_counter: str | None = None
    direct_meter: str | None = None
    supports_idle_timeout: bool = False
    annotations: dict[str, str] = field(default_factory=dict)
    location: SourceLocation | None = None

    @property
    def selector_keys(self) -> tuple[KeyField, ...]:
        return tuple(k for k in self.keys if k.match_kind == "selector")

    @property
    def match_keys(self) -> tuple[KeyField, ...]:
        return tuple(k for k in self.keys if k.match_kind != "selector")


@dataclass(frozen=True)
class Extern:
    """A v1model extern instance declared in the program.

    kind is one of counter, direct_counter, meter, direct_meter, register,
    action_profile, action_selector. ``unit`` is the counter/meter type
    (``packets``, ``bytes``, ``packets_and_bytes``); ``bitwidth`` the register cell
    width; ``algorithm`` the selector hash; ``tables`` the tables that use a direct
    or profile extern.
    """

    kind: str
    name: str
    size: int = 0
    unit: str = ""
    bitwidth: int = 0
    algorithm: str = ""
    selector_output_width: int = 0
    tables: tuple[str, ...] = ()
    annotations: dict[str, str] = field(default_factory=dict)
    location: SourceLocation | None = None


@dataclass(frozen=True)
class ControllerHeader:
    """A header annotated ``@controller_header("packet_in"|"packet_out")``."""

    name: str  # "packet_in" or "packet_out"
    type_name: str
    fields: tuple[Field, ...]


@dataclass(frozen=True)
class Digest:
    """A ``digest<T>(receiver, data)`` call site's type: name is T's name. A digest of
    a list without its type (``digest(r, {a, b})``) is ``digest_<n>`` (the n-th such call
    in the source, as p4c names it) of type tuple (``tuple_type``)."""

    name: str
    fields: tuple[Field, ...]
    tuple_type: bool = False


@dataclass(frozen=True)
class ValueSet:
    name: str
    fields: tuple[Field, ...]
    size: int


@dataclass(frozen=True)
class ProgramModel:
    """Everything the control plane may name in one compiled program."""

    source: str  # path of the main .p4 file
    arch: str  # "v1model"
    tables: tuple[Table, ...]
    actions: tuple[Action, ...]
    externs: tuple[Extern, ...]
    controller_headers: tuple[ControllerHeader, ...] = ()
    digests: tuple[Digest, ...] = ()
    value_sets: tuple[ValueSet, ...] = ()
    warnings: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        """P4Info names each table, extern instance and value set once, as p4c requires: a
        table or extern with a top-level ``@name(".x")`` in a block instantiated twice
        would be two objects of one name."""
        named: list[tuple[str, str, SourceLocation | None]] = [("table", t.name, t.location) for t in self.tables]
        named += [(e.kind, e.name, e.location) for e in self.externs]
        named += [("value_set", v.name, None) for v in self.value_sets]
        seen: set[tuple[str, str]] = set()
        for kind, name, where in named:
            if (kind, name) in seen:
                raise P4Error(f"the name '{name}' is used for more than one {kind} in the P4Info; give each "
                              "its own name (a @name starting with '.' names the same object in every "
                              "instance of its block)", str(where or self.source))
            seen.add((kind, name))

    def table(self, name: str) -> Table:
        for t in self.tables:
            if t.name == name:
                return t
        raise KeyError(name)

    def action(self, name: str) -> Action:
        for a in self.actions:
            if a.name == name:
                return a
        raise KeyError(name)

    def extern(self, name: str) -> Extern:
        for e in self.externs:
            if e.name == name:
                return e
        raise KeyError(name)
