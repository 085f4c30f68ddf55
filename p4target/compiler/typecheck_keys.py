"""The type checker of the constants and bit strings the other parts read: a select
case's or table entry's keyset against its key's type (``KeysetChecker``), and a
list, struct, header or value as one bit string for a hash, checksum or digest
(``BitsChecker``); their values are the expression checker's (typecheck_expr.py).
"""

from __future__ import annotations

from typing import Protocol

from p4target.compiler import ir
from p4target.compiler.types import BitT, BoolT, EnumT, IntT, StructT, TupleT, Type, VarbitT
from p4target.frontend import ast as A
from p4target.frontend.source import Loc, error



class Values(Protocol):
    """The expression checker, as these read it."""

    def check_value(self, e: A.Expr) -> ir.Expr: ...
    def conversion(self, vt: Type, const: object, t: Type, loc: Loc, what: str = "value") -> str | int: ...


class KeysetChecker:
    """Keysets checked against their key's type; their values are ``exprs``'."""

    def __init__(self, exprs: Values) -> None:
        self.exprs = exprs

    def check(self, e: A.Expr, t: Type, select: bool = False) -> ir.Expr:
        """One keyset of a select case (``select``) or table entry for a key of type
        ``t``: ``AnyKey``, ``MaskKey``, ``RangeKey`` or a ``Const`` of the key's type."""
        if isinstance(e, A.DefaultExpr):
            return ir.AnyKey(type=t, loc=e.loc)
        if isinstance(e, A.Mask):
            value = self.keyset_const(e.value, t)
            return ir.MaskKey(type=t, loc=e.loc, value=value, mask=self.keyset_const(e.mask, t))
        if isinstance(e, A.Range):
            lo = self.keyset_const(e.lo, t)
            return ir.RangeKey(type=t, loc=e.loc, lo=lo, hi=self.keyset_const(e.hi, t))
        if not select:
            return ir.Const(type=t, loc=e.loc, const=self.keyset_const(e, t))
        node = self.exprs.check_value(e)
        if node.const is None:
            raise error(e.loc, "select case values must be compile-time constants")
        return ir.Const(type=t, loc=e.loc, const=self.key_const(node, t, e.loc, "select case"))

    def keyset_const(self, e: A.Expr, t: Type) -> int:
        """A constant of a keyset converted to the key's type ``t`` (a signed value as it is)."""
        node = self.exprs.check_value(e)
        if node.const is None:
            raise error(e.loc, "keyset values must be compile-time constants")
        return int(self.key_const(node, t, e.loc, "keyset value"))

    def key_const(self, node: ir.Expr, t: Type, loc: Loc, what: str) -> int | bool | str:
        """The constant ``node`` converted implicitly to the key type ``t`` (a member of a
        serializable enum, where the key has the enum's underlying type, is its value)."""
        how = self.exprs.conversion(node.type, node.const, t, loc, what)
        return how if isinstance(how, int) else node.const  # type: ignore[return-value]  # a keyset value is a constant


class BitsChecker:
    """Values checked as bit strings; their parts are ``exprs``'."""

    def __init__(self, exprs: Values) -> None:
        self.exprs = exprs

    def check(self, e: A.Expr) -> ir.Bits:
        """A list/struct/header/value as one bit string (hash, checksum and digest data)."""
        parts: list[ir.Expr] = []
        holders: list[ir.Expr | None] = []
        self._bits(e, parts, holders)
        return ir.Bits(loc=e.loc, parts=tuple(parts), varbit_of=tuple(holders))

    def _bits(self, e: A.Expr, parts: list[ir.Expr], holders: list[ir.Expr | None]) -> None:
        if isinstance(e, A.ListExpr):
            for i in e.items:
                self._bits(i, parts, holders)
            return
        node = self.exprs.check_value(e)
        parts.append(node)
        if isinstance(node.type, VarbitT) and isinstance(e, A.Member):
            holders.append(self.exprs.check_value(e.obj))  # the header: its _len_ attribute is the width
            return
        holders.append(None)
        self.bits_type(node.type, e.loc)

    def bits_type(self, t: Type, loc: Loc) -> None:
        """Refuses a value of type ``t`` that has no bits of its own."""
        if isinstance(t, StructT):
            for _, ft in t.fields:
                if not isinstance(ft, VarbitT):  # a varbit field: its current bits
                    self.bits_type(ft, loc)
        elif isinstance(t, TupleT):
            for et in t.elems:
                self.bits_type(et, loc)
        elif isinstance(t, IntT):
            raise error(loc, "an unsized integer in a field list has no width; write it as 8w5 or cast it")
        elif not (isinstance(t, (BitT, BoolT)) or isinstance(t, EnumT) and t.underlying is not None):
            raise error(loc, f"a value of type {t} cannot be part of a bit string")
