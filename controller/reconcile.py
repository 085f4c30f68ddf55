"""Install by reconciling: read what each switch has, write only the difference.

Why reconcile is the only mode: a second run must write nothing, a restarted switch
(empty, or without pipeline) must get everything back, and a failure must change
only what depends on it (NIC spray groups and EVs). All three are the same
operation: compute the wanted entries (pure), read the switch, diff (pure), write.

Faults: every switch is connected, made primary and read, every entry checked
against the P4Info (while the switches answer; the check is the encoding, kept for
the write) and every switch's difference worked out, before anything is written
anywhere; a switch that is unreachable stops the run with nothing written. A write a
switch refuses rolls back what this run wrote on every switch (``keep_going``
instead goes on and lists what failed).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from finsy.proto.p4.v1 import p4runtime_pb2

from controller import wire
from controller.codec import Codec, Encoded, codec
from controller.errors import SwitchError
from controller.p4rt import Session
from controller.pipeline import pipeline
from controller.targets import SwitchTarget
from fabric.entries import Entry, GroupEntry, MemberEntry, TableEntry

log = logging.getLogger(__name__)

BATCH = 1000
DEFAULT_PARALLEL = 8


# ---- the diff (pure) -----------------------------------------------------------


_RANK = {MemberEntry: 0, GroupEntry: 1, TableEntry: 2}  # write order (deletes: reversed)


@dataclass
class Diff:
    insert: list[Entry] = field(default_factory=list)
    modify: list[tuple[Entry, Entry]] = field(default_factory=list)  # (old, new)
    delete: list[Entry] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.insert) + len(self.modify) + len(self.delete)


def diff(wanted: Sequence[Entry], actual: Sequence[Entry],
         comparable: Callable[[Entry], Entry] | None = None) -> Diff:
    """What turns ``actual`` into ``wanted`` (both canonical, see Codec.canonical);
    ``comparable``: what of an entry the target reports (Codec.comparable), when it
    does not report all of it: two entries equal in that are the same."""
    have = {e.key: e for e in actual}
    want: dict[tuple[object, ...], Entry] = {}
    out = Diff()
    for e in wanted:
        if e.key in want:
            continue
        want[e.key] = e
        old = have.get(e.key)
        if old is None:
            out.insert.append(e)
        elif old != e and (comparable is None or comparable(old) != comparable(e)):
            out.modify.append((old, e))
    out.delete = [e for k, e in have.items() if k not in want]
    return out


def diff_held(c: Codec, wanted: Sequence[Entry], updates: Sequence[bytes],
              held: Sequence[bytes]) -> tuple[Diff, list[Entry]]:
    """``diff`` of the canonical ``wanted`` entries (``updates``: their bytes, as the
    check encoded them) against what a switch holds (``held``: its Entity messages as
    bytes), and what it holds as entries (empty when nothing differs).

    Why bytes first: decoding every read entity into an entry and diffing it is
    most of the client's work for a switch that already holds its entries, and a
    second run, where nothing differs, would spend all of it to find nothing. An
    entity whose bytes are those the check made for a wanted entry is that entry
    (the encoding is canonical: tests/controller/test_wire.py), so it needs neither
    decoding nor comparing; only when some bytes match nothing (on either side) is
    the diff of values made, with only the unmatched entities decoded and the
    matched ones stood for by their wanted entry (what decoding them would give), so
    its result is that of ``diff`` whatever the switch's bytes look like."""
    have = {wire.insert_of(b): b for b in held}
    wanted_bytes = set(updates)
    if have.keys() == wanted_bytes:
        return Diff(), []
    actual: list[Entry] = []
    for u, b in have.items():
        if u not in wanted_bytes:
            e = c.decode(p4runtime_pb2.Entity.FromString(b))
            if e is not None:
                actual.append(e)
    seen: set[bytes] = set()
    for e, u in zip(wanted, updates, strict=True):
        if u in have and u not in seen:
            seen.add(u)
            actual.append(c.canonical(e))
    return diff([c.canonical(e) for e in wanted], actual, c.comparable), actual


def steps(d: Diff) -> list[tuple[str, list[Entry]]]:
    """The diff as ordered (update kind, entries) phases that never leave a dangling
    reference: new members, new/changed groups, table entries, then removals."""
    def by_rank(es: Iterable[Entry]) -> tuple[list[Entry], list[Entry], list[Entry]]:
        out: tuple[list[Entry], list[Entry], list[Entry]] = ([], [], [])
        for e in es:
            out[_RANK[type(e)]].append(e)
        return out

    ins, mods, dels = by_rank(d.insert), by_rank(new for _, new in d.modify), by_rank(d.delete)
    out: list[tuple[str, list[Entry]]] = []
    for rank in (0, 1, 2):
        out += [("insert", ins[rank]), ("modify", mods[rank])]
    out += [("delete", dels[rank]) for rank in (2, 1, 0)]
    return [(k, es) for k, es in out if es]


Phases = list[tuple[str, list[Entry]]]


def remake_groups(c: Codec, d: Diff, wanted: Sequence[Entry], actual: Sequence[Entry]) -> tuple[Phases, Diff]:
    """For a target that cannot MODIFY a group (``Codec.modifies_groups``): every
    changed group is deleted and inserted again. A group in use cannot be deleted,
    so first the table entries of ``actual`` that point at it are deleted, then the
    group; the returned diff inserts the group and the wanted table entries of
    those keys again (the rest of ``d`` as it was). Returns (the deletions to write
    first, what to write after them)."""
    if c.modifies_groups:
        return [], d
    old_groups: list[Entry] = [old for old, new in d.modify if isinstance(new, GroupEntry)]
    if not old_groups:
        return [], d
    remade = {(g.profile, g.group_id) for g in old_groups if isinstance(g, GroupEntry)}
    refs: list[Entry] = [e for e in actual if isinstance(e, TableEntry) and e.group is not None
            and (c.table_profiles.get(e.table), e.group) in remade]
    gone = {e.key for e in refs} | {g.key for g in old_groups}
    want: dict[tuple[object, ...], Entry] = {}
    for e in wanted:
        want.setdefault(e.key, e)
    again: list[Entry] = [new for _, new in d.modify if isinstance(new, GroupEntry)]
    again += [want[e.key] for e in refs if e.key in want]
    out = Diff(insert=[e for e in d.insert if e.key not in gone] + again,
               modify=[(o, n) for o, n in d.modify if n.key not in gone],
               delete=[e for e in d.delete if e.key not in gone])
    return [("delete", refs), ("delete", old_groups)], out


# ---- the run (I/O) -------------------------------------------------------------


@dataclass
class SwitchResult:
    name: str
    inserted: int = 0
    modified: int = 0
    deleted: int = 0
    pipeline_pushed: bool = False
    error: str | None = None
    wanted: int = 0

    @property
    def writes(self) -> int:
        return self.inserted + self.modified + self.deleted


@dataclass
class Report:
    results: list[SwitchResult]
    seconds: float
    rolled_back: bool = False

    @property
    def failed(self) -> list[SwitchResult]:
        return [r for r in self.results if r.error]

    @property
    def writes(self) -> int:
        return sum(r.writes for r in self.results)

    @property
    def entries(self) -> int:
        return sum(r.wanted for r in self.results)

    def summary(self) -> str:
        n = len(self.results)
        rate = self.writes / self.seconds if self.seconds > 0 else 0.0
        pushed = sum(r.pipeline_pushed for r in self.results)
        head = (f"{n} switches, {self.entries} entries wanted, {self.writes} written "
                f"({sum(r.inserted for r in self.results)} inserted, {sum(r.modified for r in self.results)} modified, "
                f"{sum(r.deleted for r in self.results)} deleted)")
        if pushed:
            head += f", {pushed} pipelines pushed"
        head += f" in {self.seconds:.2f} s"
        if self.writes:
            head += f" ({rate:,.0f} entries/s)"
        elif not self.failed:
            head += ": nothing to change"
        if self.failed:
            head += f"; {len(self.failed)} failed" + (", rolled back" if self.rolled_back else "")
        return head


Progress = Callable[[str, int], None]  # (switch name, entries just written)


SLICE = 200  # entries checked between two turns of the event loop (each turn moves the probes one step)
Known = dict[int, bytes]  # id(entry) -> its ``updates`` field inserting it, for the entries of one switch


async def _check(targets: Sequence[SwitchTarget], entries: dict[str, list[Entry]]) -> dict[str, Encoded]:
    """Check every entry against its switch's P4Info (EntryError for the first that
    does not fit, or for a table given more than it holds) by encoding it, and keep
    the bytes for the write: checking and encoding are one pass (controller/wire.py),
    done before anything is written anywhere. The event loop gets a turn every SLICE
    entries so that the switches' probes (connect, pipeline, read) go on meanwhile."""
    out: dict[str, Encoded] = {}
    for t in targets:
        c = codec(t.program, t.target)
        es = entries[t.name]
        enc = out[t.name] = Encoded()
        for k in range(0, len(es), SLICE):
            c.encode_into(enc, es, k, min(k + SLICE, len(es)))
            await asyncio.sleep(0)
        c.check_sizes(enc, t.name)
    return out


def _phases(c: Codec, d: Diff, known: Callable[[], Known], wanted: Sequence[Entry],
            actual: Sequence[Entry]) -> list[tuple[str, list[bytes]]]:
    """``steps(d)`` (after ``remake_groups``) as ``updates`` fields: the bytes of the
    check for the wanted entries (``known``: by ``id``, made only when the switch held
    something), the others (what a switch held, to delete) encoded now."""
    memo = known()
    get = memo.get
    first, d = remake_groups(c, d, wanted, actual)
    return [(kind, [wire.retype(get(id(e)) or c.update_bytes(e), kind) for e in es])
            for kind, es in first + steps(d) if es]


def _fresh_phases(enc: Encoded) -> list[tuple[str, list[bytes]]]:
    """An empty switch gets every entry inserted: the bytes of the check in the order
    of ``steps`` (members, groups, table entries), moved a run at a time."""
    by_rank: tuple[list[bytes], list[bytes], list[bytes]] = ([], [], [])
    ends = [start for start, _ in enc.runs[1:]] + [len(enc.updates)]
    for (start, kind), end in zip(enc.runs, ends, strict=True):
        by_rank[_RANK[kind]].extend(enc.updates[start:end])
    return [("insert", bs) for bs in by_rank if bs]


async def _write(s: Session, phases: Sequence[tuple[str, list[bytes]]], progress: Progress | None) -> None:
    """Write ``phases`` in order, in requests of BATCH updates (each joined from its
    updates' bytes when it is sent, in one copy); a request goes once the previous
    one is answered, so a phase ends before the next starts."""
    for _, updates in phases:
        for k in range(0, len(updates), BATCH):
            chunk = updates[k:k + BATCH]
            await s.write_updates(chunk)
            if progress:
                progress(s.target.name, len(chunk))


async def _write_diff(s: Session, c: Codec, wanted: Sequence[Entry], actual: Sequence[Entry],
                      progress: Progress | None) -> None:
    """Bring a switch holding ``actual`` to ``wanted`` (entries encoded now)."""
    await _write(s, _phases(c, diff(wanted, actual, c.comparable), dict, wanted, actual), progress)


@dataclass
class _Run:
    """One reconcile run, shared by its steps: what each switch wants, was found to
    hold and needs, what it got, and the sessions (the caller's and those it opened)."""

    targets: list[SwitchTarget]
    entries: dict[str, list[Entry]]
    results: dict[str, SwitchResult]
    sessions: dict[str, Session]
    sem: asyncio.Semaphore
    found: dict[str, tuple[bool, list[bytes]]] = field(default_factory=dict)  # (runs our pipeline, entities held)
    plans: dict[str, tuple[Diff, list[Entry]]] = field(default_factory=dict)  # (the difference, what it holds)
    before: dict[str, list[Entry]] = field(default_factory=dict)  # what each switch had when this run wrote to it

    def failed(self) -> bool:
        return any(r.error for r in self.results.values())


async def _plan(run: _Run, encoded: dict[str, Encoded]) -> None:
    """What each probed switch needs, worked out for every switch before the first write:
    an empty switch takes everything as it is; otherwise what it holds is compared with
    what is wanted (as bytes first, see diff_held)."""
    for t in run.targets:
        if t.name in run.found:
            held, es, bs = run.found[t.name][1], run.entries[t.name], encoded[t.name].updates
            d, _ = run.plans[t.name] = ((Diff(insert=es), []) if not held
                                        else diff_held(codec(t.program, t.target), es, bs, held))
            r = run.results[t.name]
            r.inserted, r.modified, r.deleted = len(d.insert), len(d.modify), len(d.delete)
            await asyncio.sleep(0)


class Reconciler:
    """Reconcile a set of switches with the entries wanted for each."""

    def __init__(self, targets: Sequence[SwitchTarget], *, election_id: int = 1,
                 parallel: int = DEFAULT_PARALLEL, keep_going: bool = False,
                 progress: Progress | None = None) -> None:
        self.targets = list(targets)
        self.election_id = election_id
        self.parallel = max(1, parallel)
        self.keep_going = keep_going
        self.progress = progress

    async def run(self, wanted: Mapping[str, Sequence[Entry]], *, dry_run: bool = False,
                  sessions: dict[str, Session] | None = None) -> Report:
        """Bring every switch of ``wanted`` to exactly those entries.

        ``sessions``: switches already connected as primary (``install --watch`` keeps
        one per switch); they are used and left open."""
        t0 = time.monotonic()
        targets = [t for t in self.targets if t.name in wanted]
        given = dict(sessions or {})
        run = _Run(targets, {t.name: list(wanted[t.name]) for t in targets},
                   {t.name: SwitchResult(t.name, wanted=len(wanted[t.name])) for t in targets},
                   dict(given), asyncio.Semaphore(self.parallel))
        try:
            encoded = await self._probe_and_check(run)
            if run.failed() and not self.keep_going:
                return Report(list(run.results.values()), time.monotonic() - t0)
            await _plan(run, encoded)
            try:
                await asyncio.gather(*(self._apply(run, t, encoded, dry_run) for t in targets))
            except SwitchError:
                pass
            rolled = False
            if run.failed() and not self.keep_going and run.before:
                rolled = await self._roll_back(run.sessions, targets, run.before)
            return Report(list(run.results.values()), time.monotonic() - t0, rolled)
        finally:
            await asyncio.gather(*(s.close() for n, s in run.sessions.items() if n not in given),
                                 return_exceptions=True)

    async def _probe(self, run: _Run, t: SwitchTarget) -> None:
        """Connect, see whether the switch runs our pipeline and read what it holds:
        nothing is written before every switch has been probed and every entry checked."""
        async with run.sem:
            try:
                s = run.sessions.get(t.name)
                if s is None:
                    s = Session(t, self.election_id)
                    await s.open()
                    run.sessions[t.name] = s
                has = await s.has_pipeline(pipeline(t.program, t.target))
                run.found[t.name] = (has, await s.read_entity_bytes(codec(t.program, t.target)) if has else [])
            except SwitchError as exc:
                run.results[t.name].error = str(exc)

    async def _probe_and_check(self, run: _Run) -> dict[str, Encoded]:
        """The switches are probed while the entries are checked (both before any write);
        a check that fails stops the probes. The encoded entries, by switch."""
        probes = [asyncio.ensure_future(self._probe(run, t)) for t in run.targets]
        try:
            encoded = await _check(run.targets, run.entries)
        except BaseException:
            for task in probes:
                task.cancel()
            await asyncio.gather(*probes, return_exceptions=True)
            raise
        await asyncio.gather(*probes)
        return encoded

    async def _apply(self, run: _Run, t: SwitchTarget, encoded: dict[str, Encoded], dry_run: bool) -> None:
        """Write one switch's plan: its pipeline when it has none, then its difference."""
        if t.name not in run.plans:
            return
        s, r = run.sessions[t.name], run.results[t.name]
        has, held = run.found[t.name]
        d, actual = run.plans[t.name]
        async with run.sem:
            try:
                c = codec(t.program, t.target)
                if not has and not dry_run:
                    await s.set_pipeline(pipeline(t.program, t.target))
                    r.pipeline_pushed = True
                if not dry_run and len(d):
                    run.before[t.name] = actual
                    es, bs = run.entries[t.name], encoded[t.name].updates
                    phases = (_fresh_phases(encoded[t.name]) if not held else
                              _phases(c, d, lambda: {id(e): b for e, b in zip(es, bs, strict=True)}, es, actual))
                    await _write(s, phases, self.progress)
            except SwitchError as exc:
                r.error = str(exc)
                if not self.keep_going:
                    raise

    async def _roll_back(self, sessions: dict[str, Session], targets: Sequence[SwitchTarget],
                         before: dict[str, list[Entry]]) -> bool:
        """Undo this run's writes: bring each written switch back to what it had."""
        by_name = {t.name: t for t in targets}
        ok = True
        for name, had in before.items():
            t = by_name[name]
            c = codec(t.program, t.target)
            s = sessions[name]
            try:
                await _write_diff(s, c, had, await s.read_entries(c), None)
            except SwitchError as exc:
                ok = False
                log.error("%s: roll back failed: %s", name, exc)
        return ok


__all__ = ["Diff", "Reconciler", "Report", "SwitchResult", "diff", "diff_held", "remake_groups", "steps"]
