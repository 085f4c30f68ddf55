"""The controller's table entries as STF ``add`` lines.

Why: a switch started with ``p4target run --commands FILE`` (and a p4c STF test that
runs on BMv2 through ``run-bmv2-test.py``) is filled from STF text, not over
P4Runtime. Writing those lines from the same entry values the installer writes keeps
one formatter for every such file. STF has no action-profile members or groups, so
those (and table entries that point at a group) are refused.
"""

from __future__ import annotations

from collections.abc import Iterable

from fabric.entries import Entry, TableEntry
from fabric.match import Exact, Lpm, Ternary


class StfError(ValueError):
    """An entry STF cannot express."""


def stf_add(e: Entry) -> str:
    """``add TABLE [PRIORITY] KEY:VALUE ... ACTION(PARAM:VALUE, ...)`` for one table entry."""
    if not isinstance(e, TableEntry) or e.group is not None or e.action is None:
        what = e.table if isinstance(e, TableEntry) else f"{e.profile} {type(e).__name__}"
        raise StfError(f"{what}: STF has no action-profile members or groups; install it over P4Runtime")
    keys = []
    for name, m in e.match:
        if isinstance(m, Lpm):
            keys.append(f"{name}:{m.value:#x}/{m.prefix_len}")
        elif isinstance(m, Ternary):
            keys.append(f"{name}:{m.value:#x}&&&{m.mask:#x}")
        elif isinstance(m, Exact):
            keys.append(f"{name}:{m.value:#x}")
        else:
            raise StfError(f"{e.table}: key {name} has a match kind STF lines here do not write ({type(m).__name__})")
    params = ", ".join(f"{k}:{v:#x}" for k, v in e.params)
    prio = f" {e.priority}" if e.priority else ""
    return f"add {e.table}{prio} {' '.join(keys)} {e.action}({params})"


def stf_lines(entries: Iterable[Entry]) -> list[str]:
    """Every entry as an ``add`` line, in order."""
    return [stf_add(e) for e in entries]
