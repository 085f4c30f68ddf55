"""The body of ``@p4runtime_translation``, which p4c parses with a grammar of its own.

``@p4runtime_translation("uri", T)`` names the type the controller sees for a
``type``-declared type: T is ``string``, ``bit<W>`` with W an integer literal, or
(older form) an integer. p4c refuses anything else as a syntax error at the first
token that does not fit; so does the target.
"""

from __future__ import annotations

from p4target.frontend.lexer import Token
from p4target.frontend.source import Loc, error

NAME = "p4runtime_translation"

# the accepted bodies, one token kind or text per position ("<str>", "<num>": the kinds)
_FORMS = (("<str>", ",", "string"), ("<str>", ",", "bit", "<", "<num>", ">"), ("<str>", ",", "<num>"))
_FIX = "write @p4runtime_translation(\"URI\", string), (\"URI\", bit<W>) with W an integer, or (\"URI\", W)"


def _fits(t: Token, want: str) -> bool:
    if want == "<str>":
        return t.kind == "str"
    if want == "<num>":
        return t.kind == "num"
    return t.text == want and t.kind != "str"


def _matched(parts: list[Token], form: tuple[str, ...]) -> int:
    """How many of ``parts`` fit ``form`` from the start."""
    n = 0
    while n < len(parts) and n < len(form) and _fits(parts[n], form[n]):
        n += 1
    return n


def check_translation(parts: list[Token], at: Loc) -> None:
    """Raise the P4Error for a ``@p4runtime_translation`` body (tokens ``parts``) that does
    not fit its grammar; ``at`` is the annotation's place (for an empty body)."""
    best = 0
    for form in _FORMS:
        n = _matched(parts, form)
        if n == len(parts) == len(form):
            return
        best = max(best, n)
    if best < len(parts):
        bad = parts[best]
        raise error(bad.loc, f"syntax error in @{NAME}: unexpected '{bad.text}'; {_FIX}")
    raise error(parts[-1].loc if parts else at, f"@{NAME} is incomplete; {_FIX}")
