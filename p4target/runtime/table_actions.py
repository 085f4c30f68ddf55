"""What an entry of one table runs: an action of the table, or a member or group of
its action profile.

``TableActions`` checks the action part of an entry or of the default action
against the table (is it an action of the table, may it be used there) and fills
it into a ``StoredEntry``: the result ``apply`` returns for a direct action, or the
member/group id and the slot list the fast path chooses from. The slot lists are
shared by all entries naming the same member or group and are refilled in place
whenever the profile changes, so that the fast path (which holds an entry's
``slots``) never needs a control-plane call to see a member change or a watch port
go down.
"""

from __future__ import annotations

from typing import Mapping

from p4target.errors import EntryError
from p4target.model import ProgramModel, Table
from p4target.runtime.actions import action_args, find_action
from p4target.runtime.entries import Group, Member
from p4target.runtime.match_engines import Result, StoredEntry
from p4target.runtime.profiles import ActionProfile


class TableActions:
    """The actions of one table and the slot lists of its profile's members and groups."""

    def __init__(self, table: Table, model: ProgramModel, profile: ActionProfile | None) -> None:
        self.name = table.name
        self.where = f"table {table.name}"
        self.model = model
        self.profile = profile
        # action name -> its position in the table's actions: the index apply returns
        self.index = {a.name: i for i, a in enumerate(table.actions)}
        self.scope = {a.name: a.scope for a in table.actions}
        # ("m" or "g", member or group id) -> the slot list entries share (StoredEntry.slots)
        self._slot_lists: dict[tuple[str, int], list[Result]] = {}
        if profile is not None:
            profile.listeners.append(self.refresh_slots)

    def check(self, action: str, for_default: bool) -> None:
        """``action`` is an action of the table usable as the default or in an entry."""
        where = self.where
        if action not in self.index:
            raise EntryError(
                "invalid",
                f"{where}: action {action} is not an action of this table (allowed: {', '.join(self.index)})",
            )
        scope = self.scope[action]
        if for_default and scope == "table_only":
            raise EntryError("invalid", f"{where}: action {action} is @tableonly and cannot be the default")
        if not for_default and scope == "default_only":
            raise EntryError("invalid", f"{where}: action {action} is @defaultonly and cannot be in an entry")

    def default_args(self, action: str, params: Mapping[str, int] | None) -> tuple[int, ...]:
        """The checked arguments of ``action`` as the table's default."""
        self.check(action, for_default=True)
        return action_args(find_action(self.model, action, self.where), params, self.where)

    def fill(self, e: StoredEntry, action: object, params: Mapping[str, int] | None) -> None:
        """Check what a control-plane entry runs and fill it into ``e``."""
        where = self.where
        profile = self.profile
        if isinstance(action, Member):
            if profile is None:
                raise EntryError("invalid", f"{where}: has no action profile; give an action name, not a member")
            if action.member_id not in profile.members:
                raise EntryError("not_found", f"{where}: member {action.member_id} does not exist in {profile.name}")
            e.member = action.member_id
            e.slots = self._slot_list(("m", action.member_id))
        elif isinstance(action, Group):
            if profile is None or not profile.is_selector:
                raise EntryError("invalid", f"{where}: has no action selector; groups cannot be used")
            if action.group_id not in profile.groups:
                raise EntryError("not_found", f"{where}: group {action.group_id} does not exist in {profile.name}")
            e.group = action.group_id
            e.slots = self._slot_list(("g", action.group_id))
        elif isinstance(action, str):
            if profile is not None:
                raise EntryError(
                    "invalid", f"{where}: uses action profile {profile.name}; give Member(id) or Group(id)"
                )
            self.check(action, for_default=False)
            act = find_action(self.model, action, where)
            e.action = action
            e.args = action_args(act, params, where)
            e.result = (self.index[action], e.args, True)
        else:
            raise EntryError("invalid", f"{where}: action must be an action name, Member or Group, got {action!r}")

    def fill_checked(self, e: StoredEntry, action: str, args: tuple[int, ...]) -> None:
        """``fill`` for a direct action whose arguments the caller has checked (the
        P4Runtime server): only what depends on the table is checked here."""
        if self.profile is not None:
            raise EntryError("invalid", f"{self.where}: uses action profile {self.profile.name}; "
                             "give Member(id) or Group(id)")
        index = self.index.get(action)
        if index is None or self.scope[action] == "default_only":
            self.check(action, for_default=False)  # raises, saying which
        e.action = action
        e.args = args
        e.result = (index, args, True)  # type: ignore[assignment]  # the entry's cached result: (action index, arguments, hit)

    def _slot_results(self, key: tuple[str, int]) -> list[Result]:
        """The results an entry pointing at member/group ``key`` chooses from now."""
        profile = self.profile
        assert profile is not None
        kind, ident = key
        if kind == "m":
            m = profile.members.get(ident)
            members: tuple = (m,) if m is not None else ()
        else:
            members = profile.live_members(ident)
        out = []
        for m in members:
            r = m.results.get(self.name)
            if r is None:
                r = m.results[self.name] = (self.index[m.action], m.args, True)
            out.append(r)
        return out

    def _slot_list(self, key: tuple[str, int]) -> list[Result]:
        lst = self._slot_lists.get(key)
        if lst is None:
            lst = self._slot_lists[key] = []
        lst[:] = self._slot_results(key)
        return lst

    def refresh_slots(self) -> None:
        """The profile changed: every slot list again, in place (entries hold them)."""
        for key, lst in self._slot_lists.items():
            lst[:] = self._slot_results(key)
