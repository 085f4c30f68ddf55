"""How P4 names become Python identifiers in generated code.

P4 allows names that are Python keywords (``from``, ``pass``...) or that start with an
underscore; mangling keeps the generated code valid without hiding the P4 name.
"""

from __future__ import annotations

import keyword
import re

_RESERVED = {"copy", "unpack"}  # methods of the generated header/struct classes


def pyfield(name: str) -> str:
    """Attribute name of a header/struct field (``_v`` is the validity flag)."""
    if keyword.iskeyword(name) or name.startswith("_") or name in _RESERVED or name in (
            "None", "True", "False"):
        return f"f_{name}"
    return name


def pyident(prefix: str, *parts: str) -> str:
    """A Python identifier from a prefix and P4 names, e.g. ``t_MyIngress_ipv6_lpm``."""
    body = "_".join(re.sub(r"\W", "_", p) for p in parts)
    return f"{prefix}_{body}" if body else prefix
