"""``Switch``: one running v1model switch and the Python API everything else uses.

It owns the compiled pipeline, the tables and externs (through ``Bindings``), the
packet replication engine and the traffic manager, and moves each packet through
simple_switch's sequence: parse, verify checksum, ingress, then ingress clone,
digests, resubmit, multicast or unicast (egress_spec 511 drops), queueing, egress,
egress clone, drop check, compute checksum, deparse, recirculate or transmit.
Two collaborators, one of each per switch, do that part: ``GeneralLoop``
(general_loop.py: the queued path, the clock and the counters) and ``FramePaths``
(frame_paths.py: ``inject`` and ``inject_batch``, the fast and direct paths); this
class makes them, binds the fast path and offers the whole API.
Tests, the STF runner, the P4Runtime server and ``p4target run`` all drive this
class; names are model names (p4c's fully qualified names).

The clock is virtual by default (it moves only with ``advance``), so timestamps,
meters and queues are deterministic in tests; ``real_time=True`` follows the
monotonic clock for live use.
"""

from __future__ import annotations

import logging
from collections import Counter as _Counter
from collections import deque
from functools import partial
from pathlib import Path
from typing import Callable, Iterable, Mapping

from p4target.errors import EntryError, P4Error
from p4target.model import ProgramModel
from p4target.runtime.bindings import DROP_PORT, Bindings
from p4target.runtime.entries import EntryHandle, TableEntry
from p4target.runtime.externs import Counter, DirectCounter, DirectMeter, Meter, Register
from p4target.runtime.frame_paths import FramePaths
from p4target.runtime.general_loop import GeneralLoop, PortStats
from p4target.runtime.pre import ReplicationEngine
from p4target.runtime.profiles import ActionProfile
from p4target.runtime.tables import TableRuntime
from p4target.runtime.traffic import TrafficManager
from p4target.runtime.value_sets import MatchValue, ValueSetRuntime

log = logging.getLogger(__name__)


def _table_refs(users: list[TableRuntime], kind: str, ident: int) -> int:
    """How many entries of the tables ``users`` refer to member or group ``ident``."""
    return sum(t._refs(kind, ident) for t in users)


class Switch:
    """A v1model switch running one compiled program; its packets move through its
    ``FramePaths`` (``inject``, ``inject_batch``) and its ``GeneralLoop`` (``send``,
    ``run_until_idle``, ``advance``)."""

    def __init__(self, program, seed: int = 0, device_id: int = 0, cpu_port: int | None = None,
                 name: str | None = None, real_time: bool = False, native: bool = True) -> None:
        """``native``: take the compiled fast path when there is one (see
        ``bind_fast_path``); False keeps the interpreted one (tests compare them)."""
        self.program = program
        self._native_wanted = native
        self.model: ProgramModel = program.model
        self.device_id = device_id
        self.cpu_port = cpu_port
        self.name = name or f"sw{device_id}"
        self.seed = seed
        self.pre = ReplicationEngine()
        self.tm = TrafficManager()
        self._loop = GeneralLoop(self.name, cpu_port, self.pre, self.tm, real_time)
        self.rt = self._build_bindings()
        self.pipeline = program.instantiate(self.rt)
        self._loop.pipeline = self.pipeline
        # the fused fast path (p4target/compiler/fast_compiler.py), made for the first frame
        first = self._first_fast if getattr(program, "may_have_fast_path", False) else None
        # which fast path frames take: "none" (yet), "python" (the generated source,
        # interpreted) or "native" (the same, compiled: p4target/accel/native.py)
        self.fast_kind = "none"
        # the direct path of inject skips the checksum blocks the compiler marks as
        # doing nothing (an empty apply)
        pipe = self.pipeline
        self._paths = FramePaths(
            self._loop, first, self._first_fast,
            None if getattr(pipe, "verify_checksum_is_noop", False) else pipe.verify_checksum,
            None if getattr(pipe, "compute_checksum_is_noop", False) else pipe.compute_checksum)
        self.errors: dict[str, int] = dict(getattr(self.pipeline, "errors", {}) or {})

    # ------------------------------------------------------------------------------
    # construction
    # ------------------------------------------------------------------------------
    @classmethod
    def load(cls, path: str | Path, seed: int = 0, device_id: int = 0, cpu_port: int | None = None,
             include_dirs: Iterable[str | Path] = (), defines: Mapping[str, str] | None = None,
             **kwargs) -> "Switch":
        """Compile a .p4 file and start a switch running it."""
        from p4target.compiler import compile_file

        program = compile_file(Path(path), include_dirs=tuple(include_dirs), defines=dict(defines or {}))
        return cls(program, seed=seed, device_id=device_id, cpu_port=cpu_port, **kwargs)

    def _build_bindings(self) -> Bindings:
        rt = Bindings(self.name, self.seed)
        model = self.model
        profiles: dict[str, ActionProfile] = {}
        direct_meters: dict[str, DirectMeter] = {}
        for ext in model.externs:
            kind = ext.kind
            if kind == "counter":
                obj: object = Counter(ext)
            elif kind == "direct_counter":
                obj = DirectCounter(ext)
            elif kind == "register":
                obj = Register(ext)
            elif kind == "meter":
                obj = Meter(ext, self._loop.now_us)
            elif kind == "direct_meter":
                obj = direct_meters[ext.name] = DirectMeter(ext, self._loop.now_us)
            elif kind in ("action_profile", "action_selector"):
                hash_fn = rt.hashes.function(ext.algorithm) if ext.algorithm else None
                obj = profiles[ext.name] = ActionProfile(ext, model, hash_fn, self.port_is_up)
            else:
                log.warning("%s: extern %s of kind %s has no runtime; ignored", self.name, ext.name, kind)
                continue
            rt.externs[ext.name] = obj
        for vs in model.value_sets:
            rt.value_sets[vs.name] = ValueSetRuntime(vs)
        for table in model.tables:
            profile = profiles.get(table.implementation) if table.implementation else None
            if table.implementation and profile is None:
                raise P4Error(f"table {table.name}: implementation {table.implementation} is not declared")
            rt.tables[table.name] = TableRuntime(
                table,
                model,
                profile=profile,
                direct_meter=direct_meters.get(table.direct_meter) if table.direct_meter else None,
                has_direct_counter=table.direct_counter is not None,
            )
        for profile in profiles.values():
            users = [rt.tables[t] for t in profile.tables if t in rt.tables]
            if not users:
                users = [t for t in rt.tables.values() if t.profile is profile]
            profile.table_refs = partial(_table_refs, users)
        self._profiles = profiles
        return rt

    # ------------------------------------------------------------------------------
    # packets in and out (the frame paths and the general loop), clock, counters
    # ------------------------------------------------------------------------------
    def inject(self, port: int, frame: bytes) -> list[tuple[int, bytes]]:
        """Process one frame (and everything it causes) until idle; every output
        (``FramePaths.inject``: the same as ``send`` + ``run_until_idle``)."""
        return self._paths.inject(port, frame)

    def inject_batch(self, port: int, frames: list[bytes],
                     failed: Callable[[bytes, Exception], None] | None = None
                     ) -> list[tuple[int, bytes]]:
        """``inject`` for each of ``frames`` (all arriving on ``port``), in order
        (``FramePaths.inject_batch``): the outputs of all of them, in order; a frame
        that raises goes to ``failed(frame, exception)`` (without it, it propagates)."""
        return self._paths.inject_batch(port, frames, failed)

    def send(self, port: int, frame: bytes) -> None:
        """Queue a frame arriving on ``port``; ``run_until_idle`` processes it."""
        self._loop.send(port, frame)

    def run_until_idle(self) -> list[tuple[int, bytes]]:
        """Process what is waiting and what the clock lets leave the queues now."""
        return self._loop.run_until_idle()

    def advance(self, seconds: float) -> list[tuple[int, bytes]]:
        """Move the virtual clock on, letting rate-limited queues drain on time."""
        return self._loop.advance(seconds)

    def digests(self) -> list[tuple[str, tuple[int, ...]]]:
        """Digests produced since the last call, oldest first."""
        return self._loop.digests()

    def now_us(self) -> int:
        """Microseconds since the switch started (virtual unless real_time)."""
        return self._loop.now_us()

    @property
    def drops(self) -> _Counter[str]:
        """Dropped packets by reason."""
        return self._loop.drops

    @property
    def drop_count(self) -> int:
        return self._loop.drop_count

    @property
    def port_stats(self) -> dict[int, PortStats]:
        """Packets and bytes received, sent and dropped, by port."""
        return self._loop.port_stats

    @property
    def packet_ins(self) -> deque[bytes]:
        """The newest frames sent to ``cpu_port`` (they are in the outputs too)."""
        return self._loop.packet_ins

    @property
    def fast_packets(self) -> int:
        """Frames the fused fast path (Pipeline.fast) handled."""
        return self._paths.fast_packets

    @property
    def _fast(self) -> Callable | None:
        """The fast path frames are offered (tests wrap it to count its calls)."""
        return self._paths.fast

    @_fast.setter
    def _fast(self, fast: Callable | None) -> None:
        self._paths.fast = fast

    # ------------------------------------------------------------------------------
    # lookups of control-plane names
    # ------------------------------------------------------------------------------
    def _table(self, name: str) -> TableRuntime:
        t = self.rt.tables.get(name)
        if t is None:
            known = ", ".join(self.rt.tables) or "(none)"
            raise EntryError("invalid", f"unknown table {name!r}; tables: {known}")
        return t

    def _extern(self, name: str, cls: type, what: str):
        obj = self.rt.externs.get(name)
        if not isinstance(obj, cls):
            known = ", ".join(n for n, o in self.rt.externs.items() if isinstance(o, cls)) or "(none)"
            raise EntryError("invalid", f"unknown {what} {name!r}; {what}s: {known}")
        return obj

    def _profile(self, name: str) -> ActionProfile:
        p = self._profiles.get(name)
        if p is None:
            # a table name stands for its implementation too
            t = self.rt.tables.get(name)
            if t is not None and t.profile is not None:
                return t.profile
            known = ", ".join(self._profiles) or "(none)"
            raise EntryError("invalid", f"unknown action profile {name!r}; profiles: {known}")
        return p

    @property
    def tables(self) -> dict[str, TableRuntime]:
        return self.rt.tables

    # ------------------------------------------------------------------------------
    # tables
    # ------------------------------------------------------------------------------
    def table_add(self, table: str, match: Mapping[str, object], action, params: Mapping[str, int] | None = None,
                  priority: int | None = None) -> EntryHandle:
        spec, prio = self._table(table).add(match, action, params, priority)
        return EntryHandle(table, spec, prio)

    def table_modify(self, table: str, match, action, params=None, priority=None) -> None:
        self._table(table).modify(match, action, params, priority)

    def table_delete(self, table: str, match, priority=None) -> None:
        self._table(table).delete(match, priority)

    def table_set_default(self, table: str, action: str, params: Mapping[str, int] | None = None) -> None:
        self._table(table).set_default(action, params)

    def table_reset_default(self, table: str) -> None:
        t = self._table(table)
        if t.table.default_is_const:
            raise EntryError("const", f"table {table}: the default action is const")
        t.reset_default()

    def table_default(self, table: str) -> tuple[str, dict[str, int]]:
        t = self._table(table)
        act = self.model.action(t.default_action)
        return t.default_action, {p.name: v for p, v in zip(act.params, t.default_args, strict=False)}

    def table_entries(self, table: str) -> list[TableEntry]:
        return self._table(table).entries()

    def table_clear(self, table: str) -> None:
        self._table(table).clear()

    def table_size(self, table: str) -> int:
        return len(self._table(table))

    # ------------------------------------------------------------------------------
    # action profiles / selectors
    # ------------------------------------------------------------------------------
    def act_prof_add_member(self, profile: str, member_id: int, action: str, params=None) -> None:
        self._profile(profile).add_member(member_id, action, params)

    def act_prof_modify_member(self, profile: str, member_id: int, action: str, params=None) -> None:
        self._profile(profile).modify_member(member_id, action, params)

    def act_prof_delete_member(self, profile: str, member_id: int) -> None:
        self._profile(profile).delete_member(member_id)

    def act_prof_add_group(self, profile: str, group_id: int, members=(), max_size: int = 0) -> None:
        self._profile(profile).add_group(group_id, members, max_size)

    def act_prof_modify_group(self, profile: str, group_id: int, members=(), max_size: int | None = None) -> None:
        self._profile(profile).modify_group(group_id, members, max_size)

    def act_prof_delete_group(self, profile: str, group_id: int) -> None:
        self._profile(profile).delete_group(group_id)

    def act_prof_members(self, profile: str):
        return dict(self._profile(profile).members)

    def act_prof_groups(self, profile: str):
        return dict(self._profile(profile).groups)

    # ------------------------------------------------------------------------------
    # counters, registers, meters
    # ------------------------------------------------------------------------------
    def counter_read(self, name: str, index: int) -> tuple[int, int]:
        return self._extern(name, Counter, "counter").read(index)

    def counter_write(self, name: str, index: int, packets: int, nbytes: int) -> None:
        self._extern(name, Counter, "counter").write(index, packets, nbytes)

    def counter_reset(self, name: str) -> None:
        self._extern(name, Counter, "counter").reset()

    def direct_counter_read(self, table: str, match, priority=None) -> tuple[int, int]:
        return self._table(table).direct_counter(match, priority)

    def direct_counter_write(self, table: str, match, packets: int, nbytes: int, priority=None) -> None:
        self._table(table).set_direct_counter(match, priority, packets, nbytes)

    def register_read(self, name: str, index: int) -> int:
        return self._extern(name, Register, "register").cp_read(index)

    def register_write(self, name: str, index: int, value: int) -> None:
        self._extern(name, Register, "register").cp_write(index, value)

    def register_reset(self, name: str) -> None:
        self._extern(name, Register, "register").reset()

    def value_set_set(self, name: str, members: Iterable[Iterable[MatchValue]]) -> None:
        """Replace the members of parser value set ``name``: one match value per field each
        (``[[Exact(0x800)], ...]`` for a ``value_set<bit<16>>``)."""
        self._value_set(name).set_members([tuple(m) for m in members])

    def value_set_members(self, name: str) -> list[tuple[MatchValue, ...]]:
        return list(self._value_set(name).members)

    def _value_set(self, name: str) -> ValueSetRuntime:
        vs = self.rt.value_sets.get(name)
        if vs is None:
            known = ", ".join(sorted(self.rt.value_sets)) or "none"
            raise EntryError("not_found", f"no value set named '{name}' (the program's: {known})")
        return vs

    def meter_set(self, name: str, index: int, cir: float, cburst: int, pir: float, pburst: int) -> None:
        self._extern(name, Meter, "meter").set(index, cir, cburst, pir, pburst)

    def meter_get(self, name: str, index: int):
        return self._extern(name, Meter, "meter").get(index)

    def meter_clear(self, name: str, index: int) -> None:
        self._extern(name, Meter, "meter").clear(index)

    def direct_meter_set(self, table: str, match, cir: float, cburst: int, pir: float, pburst: int,
                         priority=None) -> None:
        self._table(table).set_direct_meter(match, priority, (cir, cburst, pir, pburst))

    def direct_meter_clear(self, table: str, match, priority=None) -> None:
        self._table(table).set_direct_meter(match, priority, None)

    # ------------------------------------------------------------------------------
    # replication
    # ------------------------------------------------------------------------------
    def mc_group_set(self, group: int, replicas) -> None:
        self.pre.mc_group_set(group, replicas)

    def mc_group_delete(self, group: int) -> None:
        self.pre.mc_group_delete(group)

    def clone_session_set(self, session: int, replicas, truncate: int = 0) -> None:
        self.pre.clone_session_set(session, replicas, truncate)

    def clone_session_delete(self, session: int) -> None:
        self.pre.clone_session_delete(session)

    # ------------------------------------------------------------------------------
    # ports and queues
    # ------------------------------------------------------------------------------
    def set_port_status(self, port: int, up: bool) -> None:
        """A port goes down or up; selector members watching it follow at once."""
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port < DROP_PORT:
            raise EntryError("invalid", f"port {port!r} must be 0..{DROP_PORT - 1}")
        down = self._loop.down
        changed = (port in down) == bool(up)
        if up:
            down.discard(port)
        else:
            down.add(port)
        if changed:
            log.info("%s: port %d is %s", self.name, port, "up" if up else "down")
            for p in self._profiles.values():
                p.port_status_changed()

    def port_is_up(self, port: int) -> bool:
        return port not in self._loop.down

    def set_queue_depth(self, port: int | None, packets: int) -> None:
        self.tm.set_depth(port, packets)

    def set_queue_rate(self, port: int, packets_per_second: float | None) -> None:
        self.tm.set_rate(port, packets_per_second)

    # ------------------------------------------------------------------------------
    # the fast path
    # ------------------------------------------------------------------------------
    def bind_fast_path(self, wait_native: bool = False) -> None:
        """Generate and bind the fast path now instead of at the first frame.

        A live device does this when it loads a program: generating a fast path
        takes a noticeable time, and a Mininet fabric's switches each doing it on the
        first frame of a transfer held that transfer's first packets (the first
        sprayed transfer of the experiments' fabric took longer than the others).

        The compiled fast path replaces the interpreted one when it is ready (at
        once when it is in the cache); with ``wait_native`` this waits for it to be
        built (benchmarks, tests). ``fast_kind`` says which one frames take."""
        fast = self._paths.fast
        if fast is not None and fast == self._first_fast:
            self._first_fast(b"", 0, 0)
        if wait_native and self.fast_kind == "python" and self._native_wanted:
            native = self.program.native_fast_path()
            if native is not None:
                native.get()

    def _native_ready(self, make: Callable[[object], Callable], interpreted: Callable) -> None:
        """The compiled fast path is there: frames take it from the next one on (unless
        the interpreted one it replaces is gone)."""
        if self._paths.fast is interpreted:
            self._paths.fast = make(self.rt)
            self.fast_kind = "native"
            log.info("%s: compiled fast path bound", self.name)

    def _first_fast(self, data: bytes, port: int, now: int) -> None:
        """The frame paths' fast path until the first frame: bind the program's fast
        path (generated then, once per program) and let this frame take the general path."""
        paths = self._paths
        paths.fast = None
        try:
            made = self.program.fast_factory()
        except Exception:  # the general path is always there
            log.exception("%s: no fast path (it could not be built)", self.name)
            return None
        if made is not None:
            make, paths.fast_clock = made
            paths.fast = interpreted = make(self.rt)
            self.fast_kind = "python"
            try:
                native = self.program.native_fast_path() if self._native_wanted else None
                if native is not None:
                    native.when_ready(lambda compiled: self._native_ready(compiled, interpreted))
            except Exception:  # the interpreted fast path stays
                log.exception("%s: no compiled fast path", self.name)
        return None

