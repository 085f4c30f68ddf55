"""Write the controller's entries into an in-process embedded-target ``Switch``.

Why: packet tests and benchmarks run ``p4src/*.p4`` inside the test process
(``p4target.Switch``) and need exactly the entries the controller would install over
P4Runtime; this is that installer, on the Switch API instead of gRPC.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from controller.entries import Entry, GroupEntry, MemberEntry
from p4target.runtime.entries import Group

if TYPE_CHECKING:  # pragma: no cover
    from p4target import Switch


def install(sw: "Switch", entries: Iterable[Entry]) -> None:
    """Write ``entries`` in order (members before the groups that list them)."""
    for e in entries:
        if isinstance(e, MemberEntry):
            sw.act_prof_add_member(e.profile, e.member_id, e.action, dict(e.params))
        elif isinstance(e, GroupEntry):
            sw.act_prof_add_group(e.profile, e.group_id, list(e.members))
        elif e.group is not None:
            sw.table_add(e.table, dict(e.match), Group(e.group), priority=e.priority or None)
        else:
            sw.table_add(e.table, dict(e.match), e.action, dict(e.params), priority=e.priority or None)
