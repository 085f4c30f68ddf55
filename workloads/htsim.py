"""htsim's connection-matrix files (``.cm``): read into a ``Schedule``, and written.

The format (as htsim's datacenter simulator reads it; one item per line, ``#``
comments and blank lines skipped)::

    Nodes 16
    Connections 3
    Triggers 1
    0->5 id 1 start 0 size 2000000 send_done_trigger 1
    5->9 id 2 trigger 1 size 2000000
    3->4 id 3 start 12.5 size 400000
    trigger id 1 oneshot

A connection is ``SRC->DST`` then ``key value`` pairs: ``id`` (1 or more, unique),
``size`` (bytes), and either ``start`` (microseconds after the job starts) or
``trigger T`` (starts when trigger T fires); ``send_done_trigger T`` and
``recv_done_trigger T`` make it activate trigger T when it has been sent and
received (here both mean: when the receiver has every byte verified); ``prio`` is
read and not used. A trigger is ``trigger id T`` with ``oneshot`` (fires on its first
activation) or ``barrier`` with ``count C`` (fires on its C-th). ``multishot`` triggers
and ``failure`` lines are htsim's own (a flow restarted on every activation, failures
of its fat-tree's switches) and are refused with their line.

Every problem is one ``HtsimError``: ``FILE:LINE: what; the fix``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from workloads.schedule import Flow, Schedule, ScheduleError


class HtsimError(ValueError):
    """A malformed connection matrix: ``FILE:LINE: what; the fix``."""


@dataclass
class _Conn:
    line: int
    src: int
    dst: int
    id: int | None = None
    size: int | None = None
    start: float | None = None
    trigger: int | None = None
    fires: list[int] = field(default_factory=list)


@dataclass
class _Trigger:
    line: int
    kind: str
    count: int


@dataclass
class _Parse:
    where: str
    nodes: int | None = None
    headers: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> (value, line)
    conns: list[_Conn] = field(default_factory=list)
    triggers: dict[int, _Trigger] = field(default_factory=dict)

    def error(self, line: int, text: str) -> HtsimError:
        return HtsimError(f"{self.where}:{line}: {text}")


def _int(p: _Parse, line: int, what: str, text: str, least: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise p.error(line, f"{what} {text!r} is not a whole number; write e.g. {what} {max(least, 1)}") from None
    if value < least:
        raise p.error(line, f"{what} {value}: give {least} or more")
    return value


def _start(p: _Parse, line: int, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise p.error(line, f"start {text!r} is not a number of microseconds; write e.g. start 0") from None
    if not 0 <= value < float("inf"):
        raise p.error(line, f"start {text}: give 0 or more microseconds")
    return value


def _pairs(p: _Parse, line: int, tokens: list[str]) -> Iterator[tuple[str, str]]:
    """``key value`` pairs (a lone flag, e.g. ``oneshot``, has the value '')."""
    i = 0
    while i < len(tokens):
        key = tokens[i]
        if key in ("oneshot", "barrier", "multishot"):
            yield key, ""
            i += 1
            continue
        if i + 1 >= len(tokens):
            raise p.error(line, f"{key!r} has no value; write {key} N")
        yield key, tokens[i + 1]
        i += 2


def _connection(p: _Parse, line: int, tokens: list[str]) -> None:
    src_text, _, dst_text = tokens[0].partition("->")
    c = _Conn(line, _int(p, line, "source", src_text, 0), _int(p, line, "destination", dst_text, 0))
    for key, value in _pairs(p, line, tokens[1:]):
        if key == "id":
            c.id = _int(p, line, "id", value, 1)
        elif key == "size":
            c.size = _int(p, line, "size", value, 1)
        elif key == "start":
            c.start = _start(p, line, value)
        elif key == "trigger":
            c.trigger = _int(p, line, "trigger", value, 1)
        elif key in ("send_done_trigger", "recv_done_trigger"):
            t = _int(p, line, key, value, 0)
            if t:
                c.fires.append(t)
        elif key == "prio":
            _int(p, line, "prio", value, 0)
        else:
            raise p.error(line, f"unknown key {key!r} in a connection; use id, start, trigger, size, "
                          "send_done_trigger, recv_done_trigger, prio")
    if c.size is None:
        raise p.error(line, "the connection has no size; add size BYTES")
    if (c.start is None) == (c.trigger is None):
        raise p.error(line, "give the connection either start MICROSECONDS or trigger ID (one of them)")
    p.conns.append(c)


def _trigger(p: _Parse, line: int, tokens: list[str]) -> None:
    tid, kind, count = None, "", 0
    for key, value in _pairs(p, line, tokens[1:]):
        if key == "id":
            tid = _int(p, line, "trigger id", value, 1)
        elif key == "count":
            count = _int(p, line, "count", value, 1)
        elif key in ("oneshot", "barrier"):
            kind = key
        elif key == "multishot":
            raise p.error(line, "multishot triggers (a flow started again on every activation) are not "
                          "supported; use oneshot or barrier")
        else:
            raise p.error(line, f"unknown key {key!r} in a trigger; use id, oneshot, barrier, count")
    if tid is None:
        raise p.error(line, "the trigger has no id; write trigger id N oneshot")
    if not kind:
        raise p.error(line, f"trigger {tid} has no type; add oneshot or barrier")
    if kind == "barrier" and not count:
        raise p.error(line, f"barrier trigger {tid} has no count; add count N")
    if tid in p.triggers:
        raise p.error(line, f"trigger {tid} is defined twice (first on line {p.triggers[tid].line})")
    p.triggers[tid] = _Trigger(line, kind, count if kind == "barrier" else 1)


HEADERS = ("Nodes", "Connections", "Triggers", "Failures")


def _line(p: _Parse, n: int, tokens: list[str]) -> None:
    head = tokens[0]
    if head != "Nodes" and "Nodes" not in p.headers:
        raise p.error(n, "the file must start with a Nodes N line")
    if head in HEADERS:
        if len(tokens) != 2:
            raise p.error(n, f"write the header as {head} N")
        if head in p.headers:
            raise p.error(n, f"a second {head} line (the first is line {p.headers[head][1]})")
        p.headers[head] = (_int(p, n, head, tokens[1], 1 if head == "Nodes" else 0), n)
        if head == "Failures" and p.headers[head][0]:
            raise p.error(n, "failure lines name htsim's fat-tree switches and are not supported; cut a cable with "
                          "mrc-workload --cut instead and write Failures 0")
        return
    if "->" in head:
        _connection(p, n, tokens)
    elif head == "trigger":
        _trigger(p, n, tokens)
    elif head == "failure":
        raise p.error(n, "failure lines are not supported; cut a cable with mrc-workload --cut instead")
    else:
        raise p.error(n, f"{head!r} starts no known line; a line is a header (Nodes, Connections, Triggers), "
                      "SRC->DST ... or trigger id ...")


def _counts(p: _Parse, last: int) -> None:
    if "Nodes" not in p.headers:
        raise p.error(last, "no Nodes N line; the file must start with one")
    for head, have in (("Connections", len(p.conns)), ("Triggers", len(p.triggers))):
        if head in p.headers and p.headers[head][0] != have:
            want, at = p.headers[head]
            raise p.error(at, f"{head} {want}, but the file has {have}; write {head} {have}")
    if not p.conns:
        raise p.error(last, "no connections; add SRC->DST id N start 0 size BYTES lines")


def _flows(p: _Parse) -> list[Flow]:
    nodes = p.headers["Nodes"][0]
    ids: dict[int, int] = {}
    for i, c in enumerate(p.conns, 1):
        if c.id is None:
            c.id = i
        if c.id in ids:
            raise p.error(c.line, f"id {c.id} is used twice (first on line {ids[c.id]}); give each its own id")
        ids[c.id] = c.line
        for end, what in ((c.src, "source"), (c.dst, "destination")):
            if end >= nodes:
                raise p.error(c.line, f"{what} {end} is not one of the Nodes {nodes} (0..{nodes - 1})")
        if c.src == c.dst:
            raise p.error(c.line, f"the connection goes from node {c.src} to itself")
    activators: dict[int, list[int]] = {}
    for c in p.conns:
        for t in c.fires:
            if t not in p.triggers:
                raise p.error(c.line, f"trigger {t} has no 'trigger id {t} ...' line; add one")
            assert c.id is not None
            activators.setdefault(t, []).append(c.id)
    out = []
    for c in p.conns:
        assert c.id is not None and c.size is not None
        deps: tuple[int, ...] = ()
        need = None
        if c.trigger is not None:
            trig = p.triggers.get(c.trigger)
            if trig is None:
                raise p.error(c.line, f"trigger {c.trigger} has no 'trigger id {c.trigger} ...' line; add one")
            deps = tuple(activators.get(c.trigger, ()))
            if len(deps) < trig.count:
                raise p.error(c.line, f"trigger {c.trigger} needs {trig.count} activation(s) but "
                              f"{len(deps)} connection(s) activate it: this flow never starts")
            need = trig.count
        out.append(Flow(c.id, c.src, c.dst, c.size, c.start, deps, need))
    return out


def parse(text: str, where: str = "<matrix>", name: str = "matrix") -> Schedule:
    """The schedule a connection matrix describes; ``HtsimError`` naming the line."""
    p = _Parse(where)
    lines = text.splitlines()
    for n, raw in enumerate(lines, 1):
        tokens = raw.split("#", 1)[0].split()
        if tokens:
            _line(p, n, tokens)
    _counts(p, max(len(lines), 1))
    flows = _flows(p)
    try:
        return Schedule(name, p.headers["Nodes"][0], tuple(flows), 1)
    except ScheduleError as exc:  # a cycle of triggers
        raise HtsimError(f"{where}: {exc}") from None


def read(path: Path) -> Schedule:
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise HtsimError(f"{path}: cannot read it ({getattr(exc, 'strerror', None) or exc}); give a connection "
                         "matrix file") from None
    return parse(text, str(path), path.stem)


def _number(x: float) -> str:
    return f"{x:.0f}" if x == int(x) else f"{x:g}"


def write(s: Schedule) -> str:
    """The text of ``s`` as a connection matrix. A flow that waits gets a trigger of
    its own (oneshot for one flow, barrier with a count otherwise), activated by the
    flows it waits for; a flow may activate one trigger only (the format's limit:
    one send_done_trigger and one recv_done_trigger per connection, here the first)."""
    fires: dict[int, int] = {}
    triggers: list[str] = []
    for f in s.flows:
        if not f.deps:
            continue
        if len(f.deps) != f.needed and f.needed != 1:
            raise ScheduleError(f"flow {f.id} waits for {f.needed} of {len(f.deps)}: the format has no such trigger")
        for d in f.deps:
            if d in fires:
                raise ScheduleError(f"flow {d} would activate two triggers ({fires[d]} and {f.id}); the format "
                                    "gives a connection one")
            fires[d] = f.id
        kind = "oneshot" if f.needed == 1 else f"barrier count {f.needed}"
        triggers.append(f"trigger id {f.id} {kind}")
    out = [f"Nodes {s.nodes}", f"Connections {len(s.flows)}"]
    if triggers:
        out.append(f"Triggers {len(triggers)}")
    for f in s.flows:
        when = f"start {_number(f.start_us)}" if f.start_us is not None else f"trigger {f.id}"
        done = f" send_done_trigger {fires[f.id]}" if f.id in fires else ""
        out.append(f"{f.src}->{f.dst} id {f.id} {when} size {f.size}{done}")
    return "\n".join([*out, *triggers]) + "\n"
