"""Write the fabric's entries into an in-process embedded-target ``Switch``.

Why: packet tests and benchmarks run ``p4src/*.p4`` inside the test process
(``p4target.api.Switch``) and need exactly the entries the controller would install
over P4Runtime; this is that installer, on the Switch API instead of gRPC. The
fabric's plain match values become the target's here, as the codec turns them into
P4Runtime's bytes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from fabric.entries import Entry, GroupEntry, Match, MemberEntry
from fabric.match import Exact, Lpm, Ternary
from p4target import api

if TYPE_CHECKING:  # pragma: no cover
    from p4target.api import Switch


def _target_match(match: Match) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, m in match:
        if isinstance(m, Exact):
            out[name] = api.exact(m.value)
        elif isinstance(m, Lpm):
            out[name] = api.lpm(m.value, m.prefix_len)
        elif isinstance(m, Ternary):
            out[name] = api.ternary(m.value, m.mask)
        else:  # pragma: no cover - the fabric has no other match kind
            raise TypeError(f"{name}: unknown match value {m!r}")
    return out


def install(sw: "Switch", entries: Iterable[Entry]) -> None:
    """Write ``entries`` in order (members before the groups that list them)."""
    for e in entries:
        if isinstance(e, MemberEntry):
            sw.act_prof_add_member(e.profile, e.member_id, e.action, dict(e.params))
        elif isinstance(e, GroupEntry):
            sw.act_prof_add_group(e.profile, e.group_id, list(e.members))
        elif e.group is not None:
            sw.table_add(e.table, _target_match(e.match), api.group(e.group), priority=e.priority or None)
        else:
            sw.table_add(e.table, _target_match(e.match), e.action, dict(e.params), priority=e.priority or None)
