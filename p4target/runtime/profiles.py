"""Action profiles and action selectors: members, groups, weights, watch ports.

A table with ``implementation = action_profile(...)`` or ``action_selector(...)``
holds entries that point at a member (one action call) or, for a selector, a group
of members. A group member has a weight (it counts that many times in the choice,
as P4Runtime weights do on BMv2) and an optional watch port: while that port is
down the dataplane leaves the member out at once, and takes it back when the port
comes up, with no control-plane write in between. That is what lets the NIC's
spray groups survive a dead plane. The member is chosen as BMv2 does:
``hash(selector key bytes) % number of live member slots``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

from p4target.errors import EntryError
from p4target.model import Extern, ProgramModel
from p4target.runtime.actions import action_args, find_action
from p4target.runtime.hashes import of_bits


@dataclass
class ProfileMember:
    member_id: int
    action: str
    args: tuple[int, ...]
    params: dict[str, int]
    # table name -> (action index, args, True): what that table's apply returns for
    # the member (a modified member is a new object, so this never goes stale)
    results: dict[str, tuple[int, tuple[int, ...], bool]] = field(
        default_factory=dict, compare=False, repr=False)


@dataclass
class ProfileGroup:
    group_id: int
    # (member_id, weight, watch_port or None), in the order given
    members: list[tuple[int, int, int | None]] = field(default_factory=list)
    max_size: int = 0


class ActionProfile:
    """Members and groups of one action_profile / action_selector instance."""

    def __init__(
        self,
        ext: Extern,
        model: ProgramModel,
        hash_fn: Callable[[bytes], int] | None,
        port_is_up: Callable[[int], bool],
    ) -> None:
        self.name = ext.name
        self.kind = ext.kind
        self.size = ext.size
        self.algorithm = ext.algorithm
        self.is_selector = ext.kind == "action_selector"
        self.model = model
        self.tables = ext.tables
        self._hash_fn = hash_fn
        self._hash_bits = of_bits(hash_fn) if hash_fn else None
        self._port_is_up = port_is_up
        self.members: dict[int, ProfileMember] = {}
        self.groups: dict[int, ProfileGroup] = {}
        # group_id -> tuple of live ProfileMember slots (weights expanded)
        self._live: dict[int, tuple[ProfileMember, ...]] = {}
        self._refs: dict[int, int] = {}  # member_id -> number of groups using it
        self.table_refs: Callable[[str, int], int] = lambda kind, ident: 0
        # called after any change of what a member or a group selects (a member
        # modified, a group's members, a watch port up or down): the tables keep the
        # fast path's slot lists (TableRuntime.fast_lookup) up to date in place
        self.listeners: list[Callable[[], None]] = []

    # ---- allowed actions ---------------------------------------------------------
    def _check_action(self, action: str, where: str) -> None:
        for tname in self.tables:
            try:
                table = self.model.table(tname)
            except KeyError:
                continue
            refs = {a.name: a for a in table.actions}
            if action not in refs:
                raise EntryError(
                    "invalid",
                    f"{where}: action {action} is not an action of table {tname} "
                    f"(allowed: {', '.join(refs)})",
                )
            if refs[action].scope == "default_only":
                raise EntryError("invalid", f"{where}: action {action} is default_only in table {tname}")

    # ---- members -------------------------------------------------------------------
    def add_member(self, member_id: int, action: str, params: Mapping[str, int] | None) -> None:
        where = f"action profile {self.name} member {member_id}"
        if member_id in self.members:
            raise EntryError("exists", f"{where} already exists; modify or delete it first")
        if self.size and len(self.members) >= self.size:
            raise EntryError("full", f"{where}: the profile holds at most {self.size} members")
        self.members[member_id] = self._make_member(member_id, action, params, where)

    def _make_member(self, member_id: int, action: str, params, where: str) -> ProfileMember:
        act = find_action(self.model, action, where)
        self._check_action(action, where)
        args = action_args(act, params, where)
        return ProfileMember(member_id, action, args, dict(zip((p.name for p in act.params), args, strict=False)))

    def modify_member(self, member_id: int, action: str, params: Mapping[str, int] | None) -> None:
        where = f"action profile {self.name} member {member_id}"
        if member_id not in self.members:
            raise EntryError("not_found", f"{where} does not exist")
        self.members[member_id] = self._make_member(member_id, action, params, where)
        self._refresh_all()
        self._changed()

    def delete_member(self, member_id: int) -> None:
        where = f"action profile {self.name} member {member_id}"
        if member_id not in self.members:
            raise EntryError("not_found", f"{where} does not exist")
        if self._refs.get(member_id) or self.table_refs("member", member_id):
            raise EntryError("precondition", f"{where} is still used by a group or a table entry")
        del self.members[member_id]

    # ---- groups --------------------------------------------------------------------
    def _check_group_members(self, members, where: str) -> list[tuple[int, int, int | None]]:
        if not self.is_selector:
            raise EntryError("invalid", f"{where}: {self.name} is an action_profile; only selectors have groups")
        out = []
        seen = set()
        for item in members:
            if isinstance(item, int):
                item = (item, 1, None)
            if len(item) == 2:
                item = (item[0], item[1], None)
            mid, weight, watch = item
            if mid not in self.members:
                raise EntryError("not_found", f"{where}: member {mid} does not exist in {self.name}")
            if mid in seen:
                raise EntryError("invalid", f"{where}: member {mid} is listed twice")
            seen.add(mid)
            if not isinstance(weight, int) or weight < 1:
                raise EntryError("invalid", f"{where}: member {mid} weight must be a positive integer")
            if watch is not None and (not isinstance(watch, int) or watch < 0):
                raise EntryError("invalid", f"{where}: member {mid} watch port must be a port number")
            out.append((mid, weight, watch))
        return out

    @staticmethod
    def _check_max_size(members, max_size: int, where: str) -> None:
        if isinstance(max_size, bool) or not isinstance(max_size, int) or max_size < 0:
            raise EntryError("invalid", f"{where}: max_size must be a member count >= 0")
        if max_size and len(members) > max_size:
            raise EntryError("full", f"{where}: {len(members)} members exceed the group's max_size {max_size}")

    def add_group(self, group_id: int, members=(), max_size: int = 0) -> None:
        where = f"action selector {self.name} group {group_id}"
        if group_id in self.groups:
            raise EntryError("exists", f"{where} already exists; modify or delete it first")
        checked = self._check_group_members(members, where)
        self._check_max_size(checked, max_size, where)
        self.groups[group_id] = ProfileGroup(group_id, checked, max_size)
        for mid, _, _ in checked:
            self._refs[mid] = self._refs.get(mid, 0) + 1
        self._refresh(group_id)
        self._changed()

    def modify_group(self, group_id: int, members=(), max_size: int | None = None) -> None:
        where = f"action selector {self.name} group {group_id}"
        group = self.groups.get(group_id)
        if group is None:
            raise EntryError("not_found", f"{where} does not exist")
        checked = self._check_group_members(members, where)
        self._check_max_size(checked, group.max_size if max_size is None else max_size, where)
        for mid, _, _ in group.members:
            self._refs[mid] -= 1
        for mid, _, _ in checked:
            self._refs[mid] = self._refs.get(mid, 0) + 1
        group.members = checked
        if max_size is not None:
            group.max_size = max_size
        self._refresh(group_id)
        self._changed()

    def delete_group(self, group_id: int) -> None:
        where = f"action selector {self.name} group {group_id}"
        group = self.groups.get(group_id)
        if group is None:
            raise EntryError("not_found", f"{where} does not exist")
        if self.table_refs("group", group_id):
            raise EntryError("precondition", f"{where} is still used by a table entry")
        for mid, _, _ in group.members:
            self._refs[mid] -= 1
        del self.groups[group_id]
        self._live.pop(group_id, None)

    # ---- the dataplane side --------------------------------------------------------
    def _refresh(self, group_id: int) -> None:
        group = self.groups[group_id]
        up = self._port_is_up
        slots: list[ProfileMember] = []
        for mid, weight, watch in group.members:
            if watch is not None and not up(watch):
                continue
            slots.extend([self.members[mid]] * weight)
        self._live[group_id] = tuple(slots)

    def _refresh_all(self) -> None:
        for gid in self.groups:
            self._refresh(gid)

    def _changed(self) -> None:
        for fn in self.listeners:
            fn()

    def port_status_changed(self) -> None:
        """Called by the switch when any port goes up or down."""
        self._refresh_all()
        self._changed()

    def live_members(self, group_id: int) -> tuple[ProfileMember, ...]:
        return self._live.get(group_id, ())

    def select(self, group_id: int, sel: tuple[int, ...] | None, widths: tuple[int, ...]) -> ProfileMember | None:
        """The member for a packet with selector key values ``sel``; None when no
        member is live (the table then behaves as on a miss)."""
        slots = self._live.get(group_id)
        if not slots:
            return None
        n = len(slots)
        if n == 1:
            return slots[0]
        hash_bits = self._hash_bits
        if hash_bits is None:
            return slots[0]
        if sel is not None and len(sel) == 1:  # the usual one selector field
            return slots[hash_bits(sel[0], widths[0]) % n]
        data = 0
        nbits = 0
        for value, width in zip(sel or (), widths, strict=False):
            data = (data << width) | value
            nbits += width
        return slots[hash_bits(data, nbits) % n]
