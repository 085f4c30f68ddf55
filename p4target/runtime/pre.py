"""The packet replication engine: multicast groups and clone (mirror) sessions.

A packet whose ingress sets ``mcast_grp`` is copied once per (port, rid) of that
group; a ``clone()`` names a session that says where the copy goes. Both are
control-plane state of the switch, not of the program, so they survive nothing
but themselves: they are plain tables here, validated on write.
"""

from __future__ import annotations

from dataclasses import dataclass

from p4target.errors import EntryError

MAX_PORT = 511
MAX_GROUP = 0xFFFF
MAX_RID = 0xFFFF


@dataclass(frozen=True)
class CloneSession:
    session: int
    replicas: tuple[tuple[int, int], ...]
    truncate: int = 0  # 0: whole packet; else bytes to keep of each copy


def _check_replicas(where: str, replicas) -> tuple[tuple[int, int], ...]:
    out = []
    seen = set()
    try:
        items = list(replicas)
    except TypeError:
        raise EntryError("invalid", f"{where}: replicas must be a list of (port, rid)") from None
    for item in items:
        if isinstance(item, int):
            item = (item, 0)
        try:
            port, rid = item
        except (TypeError, ValueError):
            raise EntryError("invalid", f"{where}: replica {item!r} must be (port, rid)") from None
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port < MAX_PORT:
            raise EntryError("invalid", f"{where}: port {port!r} must be 0..{MAX_PORT - 1}")
        if isinstance(rid, bool) or not isinstance(rid, int) or not 0 <= rid <= MAX_RID:
            raise EntryError("invalid", f"{where}: rid {rid!r} must be 0..{MAX_RID}")
        if (port, rid) in seen:
            raise EntryError("invalid", f"{where}: replica (port {port}, rid {rid}) is listed twice")
        seen.add((port, rid))
        out.append((port, rid))
    return tuple(out)


class ReplicationEngine:
    """Multicast groups (group id -> replicas) and clone sessions (id -> session)."""

    def __init__(self) -> None:
        self.groups: dict[int, tuple[tuple[int, int], ...]] = {}
        self.sessions: dict[int, CloneSession] = {}

    def mc_group_set(self, group: int, replicas) -> None:
        where = f"multicast group {group!r}"
        if isinstance(group, bool) or not isinstance(group, int) or not 1 <= group <= MAX_GROUP:
            raise EntryError("invalid", f"{where}: group id must be 1..{MAX_GROUP} (0 means no multicast)")
        self.groups[group] = _check_replicas(where, replicas)

    def mc_group_delete(self, group: int) -> None:
        if group not in self.groups:
            raise EntryError("not_found", f"multicast group {group!r} does not exist")
        del self.groups[group]

    def replicas(self, group: int) -> tuple[tuple[int, int], ...]:
        return self.groups.get(group, ())

    def clone_session_set(self, session: int, replicas, truncate: int = 0) -> None:
        where = f"clone session {session!r}"
        if isinstance(session, bool) or not isinstance(session, int) or not 1 <= session <= 32767:
            raise EntryError("invalid", f"{where}: session id must be 1..32767")
        if isinstance(truncate, bool) or not isinstance(truncate, int) or truncate < 0:
            raise EntryError("invalid", f"{where}: truncate must be a byte count >= 0")
        self.sessions[session] = CloneSession(session, _check_replicas(where, replicas), truncate)

    def clone_session_delete(self, session: int) -> None:
        if session not in self.sessions:
            raise EntryError("not_found", f"clone session {session!r} does not exist")
        del self.sessions[session]

    def session(self, session: int) -> CloneSession | None:
        return self.sessions.get(session)
