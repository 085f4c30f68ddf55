"""P4 types as the compiler sees them after typedefs are resolved.

Only what the generated code needs is kept: widths and signedness for arithmetic,
field layouts for headers and structs, member values for enums and errors.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class Type:
    """Base class of every resolved P4 type."""

    def __str__(self) -> str:  # pragma: no cover - overridden
        return type(self).__name__


@dataclass(frozen=True)
class BitT(Type):
    width: int
    signed: bool = False
    new_type: str = field(default="", compare=False)  # the `type` declaring it, if one does

    def __str__(self) -> str:
        return f"{'int' if self.signed else 'bit'}<{self.width}>"

    @property
    def mask(self) -> int:
        return (1 << self.width) - 1


@dataclass(frozen=True)
class IntT(Type):
    """Arbitrary-precision ``int``: the type of unsized integer literals."""

    def __str__(self) -> str:
        return "int"


@dataclass(frozen=True)
class BoolT(Type):
    def __str__(self) -> str:
        return "bool"


@dataclass(frozen=True)
class VarbitT(Type):
    max_width: int

    def __str__(self) -> str:
        return f"varbit<{self.max_width}>"


@dataclass(frozen=True)
class ErrorT(Type):
    def __str__(self) -> str:
        return "error"


@dataclass(frozen=True)
class StringT(Type):
    def __str__(self) -> str:
        return "string"


@dataclass(frozen=True)
class VoidT(Type):
    def __str__(self) -> str:
        return "void"


@dataclass(frozen=True)
class MatchKindT(Type):
    def __str__(self) -> str:
        return "match_kind"


@dataclass(eq=False)
class EnumT(Type):
    name: str
    members: dict[str, int]
    underlying: BitT | None = None

    def __str__(self) -> str:
        return f"enum {self.name}"


@dataclass(eq=False)
class StructT(Type):
    """header, header_union or struct; ``pyname`` is the generated class name."""

    kind: str
    name: str
    fields: list[tuple[str, Type]]
    annotations: dict[str, list[object]] = field(default_factory=dict)
    field_annotations: dict[str, dict[str, list[object]]] = field(default_factory=dict)
    pyname: str = ""

    def __str__(self) -> str:
        return f"{self.kind} {self.name}"

    def field_type(self, name: str) -> Type | None:
        for n, t in self.fields:
            if n == name:
                return t
        return None

    @property
    def width(self) -> int:
        """Bit width of a header (varbit fields count with their maximum)."""
        return sum(bit_width(t) for _, t in self.fields)


@dataclass(frozen=True)
class StackT(Type):
    elem: StructT
    size: int

    def __str__(self) -> str:
        return f"{self.elem.name}[{self.size}]"


@dataclass(frozen=True)
class TupleT(Type):
    elems: tuple[Type, ...]

    def __str__(self) -> str:
        return "tuple<" + ", ".join(map(str, self.elems)) + ">"


@dataclass(eq=False)
class ExternT(Type):
    """An extern object type (counter, register, ...); ``args`` are its type arguments."""

    name: str
    args: tuple[Type, ...] = ()

    def __str__(self) -> str:
        return f"extern {self.name}"


@dataclass(eq=False)
class ObjT(Type):
    """A non-value object: packet_in/out, a table, a parser/control, a function."""

    kind: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind} {self.name}"


def bit_width(t: Type) -> int:
    """Width in bits of a type that has a fixed wire representation."""
    if isinstance(t, BitT):
        return t.width
    if isinstance(t, BoolT):
        return 1
    if isinstance(t, VarbitT):
        return t.max_width
    if isinstance(t, EnumT) and t.underlying is not None:
        return t.underlying.width
    if isinstance(t, StructT):
        return t.width
    if isinstance(t, StackT):
        return t.elem.width * t.size
    raise TypeError(f"type {t} has no fixed width")


def has_width(t: Type) -> bool:
    try:
        bit_width(t)
        return True
    except TypeError:
        return False


def same_type(a: Type, b: Type) -> bool:
    if a is b:
        return True
    if isinstance(a, (BitT, IntT, BoolT, VarbitT, ErrorT, StringT, VoidT, TupleT)):
        return a == b
    if isinstance(a, StackT) and isinstance(b, StackT):
        return a.elem is b.elem and a.size == b.size
    return False
