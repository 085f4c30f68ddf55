"""``Bindings``: what the generated pipeline code calls into (contract section 2).

The generated code holds direct references to these tables, externs and methods,
so every method here is on the per-packet path and does as little as it can. The
packet-level side effects (clone, resubmit, recirculate, truncate, digest) only
record the request on the packet state; the switch acts on them between stages,
exactly where simple_switch does.
"""

from __future__ import annotations

import logging
import random as _random
import re

from p4target.runtime.hashes import HashEngine, to_bytes
from p4target.runtime.tables import TableRuntime
from p4target.runtime.value_sets import ValueSetRuntime

log = logging.getLogger(__name__)

DROP_PORT = 511


class PacketAbort(Exception):
    """An ``assert``/``assume`` failed: the switch drops the packet and counts it."""

    def __init__(self, where: str) -> None:
        self.where = where
        super().__init__(where)


_PLACEHOLDER = re.compile(r"\{\}")


class Bindings:
    """The runtime side of one switch, as the compiled program sees it."""

    def __init__(self, name: str = "switch", seed: int = 0) -> None:
        self.name = name
        self.tables: dict[str, TableRuntime] = {}
        self.externs: dict[str, object] = {}
        self.value_sets: dict[str, ValueSetRuntime] = {}
        self.rng = _random.Random(seed)
        self.hashes = HashEngine(random_fn=lambda: self.rng.getrandbits(32))

    def mark_to_drop(self, st) -> None:
        sm = st.sm
        sm.egress_spec = DROP_PORT
        sm.mcast_grp = 0

    def hash(self, algo: str, data: int, nbits: int) -> int:
        return self.hashes.function(algo)(to_bytes(data, nbits))

    def checksum(self, algo: str, data: int, nbits: int, payload: bytes = b"") -> int:
        raw = to_bytes(data, nbits)
        if payload:
            raw += bytes(payload)
        return self.hashes.function(algo)(raw)

    def random(self, st, lo: int, hi: int) -> int:
        if hi <= lo:
            return lo
        return self.rng.randint(lo, hi)

    def clone(self, st, kind: int, session: int, field_list: int | None) -> None:
        st.clones.append((kind, session, field_list))

    def resubmit(self, st, field_list: int) -> None:
        st.resubmit = field_list

    def recirculate(self, st, field_list: int) -> None:
        st.recirculate = field_list

    def truncate(self, st, length: int) -> None:
        st.truncate_to = length

    def digest(self, st, name: str, values: tuple[int, ...]) -> None:
        st.digests.append((name, tuple(values)))

    def log_msg(self, st, fmt: str, args: tuple[int, ...]) -> None:
        if not log.isEnabledFor(logging.INFO):
            return
        it = iter(args)
        text = _PLACEHOLDER.sub(lambda m: str(next(it, "{}")), fmt)
        log.info("%s: log_msg: %s", self.name, text)

    def assert_(self, st, cond: bool, where: str) -> None:
        if not cond:
            raise PacketAbort(where)
