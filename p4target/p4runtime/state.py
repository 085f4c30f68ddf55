"""What the server remembers about one committed pipeline.

The Switch holds the tables; the server additionally keeps what P4Runtime reads back
but the Switch API does not report (action profile members and groups, multicast
groups, clone sessions, meter configs, the current default actions, digest configs,
the one-shot selector groups it created for ``action_profile_action_set`` entries).
Every record changes only after the Switch accepted the matching call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from finsy.proto.p4.v1 import p4runtime_pb2

from p4target.p4runtime.schema import Schema
from p4target.p4runtime.translate import ActionCall

# One-shot groups and their members live at the top of the id space, out of the way
# of controller-chosen ids (P4Runtime ids are uint32; controllers count from 1).
ONE_SHOT_BASE = 0xF000_0000


@dataclass
class GroupRecord:
    members: list[tuple[int, int, int | None]]  # (member id, weight, watch port)
    max_size: int = 0


@dataclass
class OneShot:
    group_id: int
    member_ids: list[int]
    action_set: p4runtime_pb2.ActionProfileActionSet


@dataclass
class PipelineState:
    schema: Schema
    compiled: Any
    device_config: bytes
    cookie: int = 0
    members: dict[str, dict[int, ActionCall]] = field(default_factory=dict)
    groups: dict[str, dict[int, GroupRecord]] = field(default_factory=dict)
    one_shots: dict[tuple, OneShot] = field(default_factory=dict)
    defaults: dict[str, ActionCall] = field(default_factory=dict)  # tables whose default was modified
    mc_groups: dict[int, p4runtime_pb2.MulticastGroupEntry] = field(default_factory=dict)
    clone_sessions: dict[int, p4runtime_pb2.CloneSessionEntry] = field(default_factory=dict)
    meters: dict[tuple[str, int], p4runtime_pb2.MeterConfig] = field(default_factory=dict)
    direct_meters: dict[tuple, p4runtime_pb2.MeterConfig] = field(default_factory=dict)
    digest_configs: dict[int, p4runtime_pb2.DigestEntry.Config] = field(default_factory=dict)
    next_one_shot: int = ONE_SHOT_BASE

    def schema_tables_of(self, profile: str) -> set[str]:
        """Names of the tables implemented by action profile ``profile``."""
        return {t.name for t in self.schema.tables.values() if t.profile is not None and t.profile.name == profile}

    def fresh(self) -> "PipelineState":
        """The same pipeline with nothing written yet (for replays into a new switch)."""
        return PipelineState(self.schema, self.compiled, self.device_config, self.cookie)

    def allocate_one_shot_id(self) -> int:
        self.next_one_shot += 1
        return self.next_one_shot


def entry_key(table: str, match: dict, priority: int | None) -> tuple:
    """A hashable identity of one table entry (wildcards are absent from ``match``)."""
    return (table, tuple(sorted(match.items(), key=lambda kv: kv[0])), priority)
