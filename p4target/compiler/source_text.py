"""The source text of expressions and types, as p4c prints them (key names, error
messages)."""

from __future__ import annotations

from p4target.frontend import ast as A


def expr_text(e: A.Expr | None) -> str:
    """Canonical source text of an expression, as p4c prints key names."""
    if e is None:
        return "_"
    if isinstance(e, A.Name):
        return ("." if e.top else "") + e.name
    if isinstance(e, A.Member):
        return f"{expr_text(e.obj)}.{e.name}"
    if isinstance(e, A.Index):
        return f"{expr_text(e.obj)}[{expr_text(e.index)}]"
    if isinstance(e, A.Slice):
        return f"{expr_text(e.obj)}[{expr_text(e.hi)}:{expr_text(e.lo)}]"
    if isinstance(e, A.IntLit):
        return e.text
    if isinstance(e, A.BoolLit):
        return "true" if e.value else "false"
    if isinstance(e, A.Call):
        return f"{expr_text(e.func)}({', '.join(expr_text(a.value) for a in e.args)})"
    if isinstance(e, A.Binary):
        return f"{expr_text(e.left)} {e.op} {expr_text(e.right)}"
    if isinstance(e, A.Unary):
        return f"{e.op}{expr_text(e.operand)}"
    if isinstance(e, A.TypeNameExpr):
        return e.name
    if isinstance(e, A.Cast):
        return f"({type_text(e.type)}){expr_text(e.expr)}"
    if isinstance(e, A.StrLit):
        return repr(e.value)
    return type(e).__name__


def type_text(t: A.TypeRef) -> str:
    if isinstance(t, A.BitsType):
        return f"{t.kind}<{expr_text(t.width)}>" if t.width is not None else t.kind
    if isinstance(t, A.NamedType):
        return t.name
    return type(t).__name__
