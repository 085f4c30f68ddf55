"""The one background task that reads the fabric about once a second.

Why one task: every browser tab and every Prometheus scrape sees the same latest
reading; none of them reaches a switch. Each tick reads every switch's counters over
P4Runtime (a session kept open per switch, reopened when it drops:
``controller.counters.read_session``), the fabric switches' deepest-queue register
where the target keeps it, the running network's state file (cables down, links
denied) and the lines appended to the EV events file; then it wakes the page's
streams.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from dataclasses import replace
from pathlib import Path
from typing import Any

from controller import counters as C
from finsy.proto.p4.v1 import p4runtime_pb2

from controller.codec import codec
from controller.errors import SwitchError
from controller.p4rt import Session
from controller.targets import SwitchTarget
from fabric.topology import TopologyError
from controller.network_state import Inventory, load
from webview import snapshot as S
from webview.events import EventLog
from webview.model import Drawing

log = logging.getLogger(__name__)

HISTORY = 120  # seconds of NIC receive rates kept for the page's chart
READ_TIMEOUT = 3.0
WATCH = 0.1  # seconds between looks at the state file's modification time
IDLE_AFTER = 120.0  # seconds after the last request (no page open) the counters are no longer read  # a switch that takes longer is shown as not answering this tick


class SwitchReader:
    """One switch's counters over a session kept open between ticks."""

    def __init__(self, target: SwitchTarget, election_id: int, ports: list[int]) -> None:
        self.target = target
        self.election_id = election_id
        self.ports = ports  # the cabled ports: the cells read of the per-port counters and the register
        self.session: Session | None = None
        self.registers = target.program == "fabric"  # False once the target says it has none to read

    async def read(self) -> tuple[C.Counts, dict[int, int] | None]:
        """The switch's counters and its ports' deepest queue (None: not kept)."""
        if self.session is None:
            s = Session(self.target, self.election_id, primary=False)
            await s.open()
            self.session = s
        try:
            counts = await C.read_session(self.session, self.target, self.ports)
            return counts, await self._qdepth(self.session)
        except BaseException:
            await self.close()
            raise

    async def _qdepth(self, s: Session) -> dict[int, int] | None:
        if not self.registers:
            return None
        p4info = codec(self.target.program, self.target.target).p4info
        rid = next(r.preamble.id for r in p4info.registers if r.preamble.name == S.QDEPTH_REGISTER)
        try:
            ents = await s.read([p4runtime_pb2.Entity(register_entry=p4runtime_pb2.RegisterEntry(
                register_id=rid, index=p4runtime_pb2.Index(index=port))) for port in self.ports])
        except SwitchError:  # BMv2 reads no register over P4Runtime (docs/mininet.md)
            self.registers = False
            return None
        return {e.register_entry.index.index: int.from_bytes(e.register_entry.data.bitstring, "big") for e in ents}

    async def close(self) -> None:
        s, self.session = self.session, None
        if s is not None:
            try:
                await s.close()
            except Exception:  # a session already broken
                pass


class Poller:
    """The latest reading of one network, refreshed every ``interval`` seconds.

    The switches' counters are read only while someone looks (a page following the
    stream, or a request in the last ``IDLE_AFTER`` seconds: a Prometheus scrape
    interval fits in it), so a network nobody watches is never read.

    ``state``: the running network's state file, read anew each tick (None: no
    network, the drawing and the events only)."""

    def __init__(self, drawing: Drawing, state: Path | None, events: EventLog, interval: float = 1.0,
                 election_id: int = 1, tls_dir: Path | None = None) -> None:
        self.drawing = drawing
        self.tls_dir = str(tls_dir.resolve()) if tls_dir is not None else None
        self.state = state
        self.events = events
        self.interval = interval
        self.election_id = election_id
        self.readers: dict[str, SwitchReader] = {}
        self.counts: dict[str, C.Counts] = {}
        self.rates: dict[str, C.Counts] | None = None
        self.qdepth: dict[str, dict[int, int] | None] = {}
        self.dt = 0.0
        self.read_at = 0.0
        self.counted_at = 0.0  # unix time of the latest counter reading
        self.silent: dict[str, str] = {}  # switch -> why it did not answer this tick
        self.down: list[str] = []
        self.denied: list[str] = []
        self.problem: str | None = None
        self.state_read = 0.0  # unix time the state file was last read
        self.state_stamp: tuple[int, int] | None = None  # its modification time and size then
        self.history: deque[dict[str, Any]] = deque(maxlen=HISTORY)
        self.seq = 0
        self.read_errors = 0
        self.changed = asyncio.Event()
        self.streams = 0  # pages following the stream now
        self.asked = -IDLE_AFTER  # time.monotonic() of the latest request
        self.wake = asyncio.Event()
        self.latest: dict[str, Any] = self._snapshot()

    # ---- one tick -------------------------------------------------------------

    def _inventory(self) -> Inventory | None:
        """The state file read anew (cables cut and links denied change while it runs)."""
        if self.state is None:
            return None
        self.state_read = time.time()
        self.state_stamp = self._stamp()
        try:
            inv = load(self.state)
        except TopologyError as exc:
            self.problem = f"no running network: {exc}"
            return None
        self.problem = None
        self.down, self.denied = list(inv.down), list(inv.denied)
        if self.tls_dir is not None:
            inv.switches = {k: replace(t, tls_dir=self.tls_dir) for k, t in inv.switches.items()}
        return inv

    def _stamp(self) -> tuple[int, int] | None:
        """The state file's modification time and size (None: no file)."""
        try:
            st = self.state.stat() if self.state is not None else None
        except OSError:
            return None
        return None if st is None else (st.st_mtime_ns, st.st_size)

    async def _read(self, inv: Inventory) -> None:
        programs = self.drawing.programs
        names = [n for n in inv.switches if n in programs]
        for n in set(self.readers) - set(names):
            await self.readers.pop(n).close()
        for n in names:
            if n not in self.readers or self.readers[n].target != inv.switches[n]:
                if n in self.readers:
                    await self.readers[n].close()
                self.readers[n] = SwitchReader(inv.switches[n], self.election_id, self.drawing.cabled(n))
        t0 = time.monotonic()
        results = await asyncio.gather(*(asyncio.wait_for(self.readers[n].read(), READ_TIMEOUT) for n in names),
                                       return_exceptions=True)
        now: dict[str, C.Counts] = {}
        self.silent = {}
        for n, r in zip(names, results, strict=True):
            if isinstance(r, BaseException):
                self.read_errors += 1
                self.silent[n] = str(r) or type(r).__name__
                await self.readers[n].close()
            else:
                now[n], self.qdepth[n] = r
        t1 = (t0 + time.monotonic()) / 2
        if self.counts and self.read_at:
            self.rates, self.dt = C.delta(now, self.counts), t1 - self.read_at
        self.counts = {**self.counts, **now}
        self.read_at = t1
        self.counted_at = time.time()

    def watched(self) -> bool:
        """Has anyone looked lately (a page open, a request, a scrape)?"""
        return self.streams > 0 or time.monotonic() - self.asked < IDLE_AFTER

    def touch(self) -> None:
        """Someone looks: read the counters again (at once, if they were not read)."""
        idle = not self.watched()
        self.asked = time.monotonic()
        if idle:
            self.wake.set()

    async def fresh(self) -> None:
        """Wait (a few seconds at most) for a reading when the counters were not being read."""
        idle = not self.watched()
        self.touch()
        if idle and self.state is not None:
            changed = self.changed
            try:
                await asyncio.wait_for(changed.wait(), READ_TIMEOUT + 1)
            except TimeoutError:
                pass

    async def _forget(self) -> None:
        """Nobody looks: no reading, no session kept; no old figure served as new."""
        for n in list(self.readers):
            await self.readers.pop(n).close()
        self.counts, self.rates, self.qdepth, self.silent, self.read_at = {}, None, {}, {}, 0.0

    async def tick(self) -> None:
        inv = self._inventory()
        if inv is not None and self.watched():
            await self._read(inv)
        elif self.readers or self.counts:
            await self._forget()
        self.events.poll()
        self._publish()
        if self.latest["rx"] is not None:
            self.history.append({"t": self.counted_at, "rx": self.latest["rx"]})

    def watch_state(self) -> bool:
        """Between ticks: the state file read again as soon as it changes (a cable cut
        shorter than a tick still shows), and a snapshot published; whether it had."""
        if self.state is None or self._stamp() == self.state_stamp:
            return False
        self._inventory()
        self._publish()
        return True

    def _publish(self) -> None:
        self.seq += 1
        self.latest = self._snapshot()
        self.changed.set()
        self.changed = asyncio.Event()

    def _snapshot(self) -> dict[str, Any]:
        with_counters = bool(self.counts)
        return {
            "seq": self.seq,
            "t": time.time(),
            "interval": round(self.dt, 3),
            "counters": with_counters,
            "counted_at": self.counted_at,
            "state_read": self.state_read,
            "problem": self.problem,
            "silent": self.silent,
            "down": sorted(self.down),
            "denied": sorted(self.denied),
            "links": S.links_now(self.drawing, self.down, self.denied, self.rates, self.dt),
            "rx": S.nic_rx_rates(self.drawing, self.rates, self.dt) if self.rates is not None and self.dt > 0 else None,
            "events": self.events.to_json(),
        }

    def page_state(self) -> dict[str, Any]:
        """The latest snapshot with the NICs' receive rates over the last minutes."""
        return {**self.latest, "history": list(self.history)}

    def switch(self, name: str) -> dict[str, Any] | None:
        """One switch's ports and drops from the latest reading (None: no such switch)."""
        program = self.drawing.programs.get(name)
        if program is None:
            return None
        rates = None if self.rates is None else self.rates.get(name, {})
        out = S.switch_ports(self.drawing, name, program, self.counts.get(name, {}), rates, self.dt,
                             self.qdepth.get(name))
        out["answered"] = name in self.counts and name not in self.silent
        out["why_not"] = self.silent.get(name)
        return out

    async def run(self) -> None:
        """Tick about every ``interval`` seconds until cancelled (a tick that takes
        longer delays the next, never overlaps it)."""
        try:
            while True:
                start = time.monotonic()
                try:
                    await self.tick()
                except Exception:  # a reading gone wrong must not end the view
                    log.exception("web view: a reading failed")
                self.wake = asyncio.Event()
                while not self.wake.is_set():
                    left = self.interval - (time.monotonic() - start)
                    await asyncio.sleep(max(0.0, min(WATCH, left)))
                    if left <= WATCH:
                        break
                    self.watch_state()
        finally:
            for r in self.readers.values():
                await r.close()
