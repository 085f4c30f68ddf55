"""What an end-to-end test reads for itself instead of believing the system's verdict:
every table of every switch and their counters over P4Runtime, and whether a cable is
cut as the kernel says (the interfaces' state, or the nftables tables that drop what
they send), all while the network runs.

Why: "no table written" and "tables unchanged" are claims of the code under test; a
test that asserts them as printed passes whatever the code does. These helpers use the
controller's P4Runtime session and codec (``controller/p4rt.py``) and counters reader
(``controller/counters.py``), nothing of the demo or the experiments.
"""

from __future__ import annotations

import asyncio
import subprocess
import threading
import time
from collections.abc import Mapping
from typing import Any

from controller.codec import codec
from controller.counters import Counts, read_all
from controller.p4rt import Session
from controller.targets import SwitchTarget
from controller.cable_cuts import cut_table
from controller.network_state import LinkEnds

Tables = dict[str, list[str]]  # switch -> every entry it holds, each as its repr, sorted


async def _read_open(sessions: Mapping[str, Session]) -> Tables:
    async def one(name: str, s: Session) -> tuple[str, list[str]]:
        return name, sorted(map(repr, await s.read_entries(codec(s.target.program, s.target.target))))

    return dict(await asyncio.gather(*(one(n, s) for n, s in sessions.items())))


async def _open(switches: Mapping[str, SwitchTarget]) -> dict[str, Session]:
    sessions = {name: Session(t, primary=False) for name, t in switches.items()}
    await asyncio.gather(*(s.open() for s in sessions.values()))
    return sessions


async def _close(sessions: Mapping[str, Session]) -> None:
    await asyncio.gather(*(s.close() for s in sessions.values()), return_exceptions=True)


def read_tables(switches: Mapping[str, SwitchTarget]) -> Tables:
    """Every table entry, action profile member and group of every switch, read now."""
    async def go() -> Tables:
        sessions = await _open(switches)
        try:
            return await _read_open(sessions)
        finally:
            await _close(sessions)

    return asyncio.run(go())


def read_counters(switches: Mapping[str, SwitchTarget]) -> dict[str, Counts]:
    """Every counter of every switch, read now (non-zero cells)."""
    return asyncio.run(read_all(list(switches.values())))


def kill_once_written(proc: subprocess.Popen[Any], switches: Mapping[str, SwitchTarget],
                      timeout: float = 60.0) -> None:
    """Kill ``proc`` (SIGKILL) the moment any of ``switches`` holds an entry: the
    tables are read over and over on sessions opened beforehand."""
    async def go() -> None:
        sessions = await _open(switches)
        try:
            end = time.monotonic() + timeout
            while proc.poll() is None and time.monotonic() < end:
                if entries(await _read_open(sessions)) > 0:
                    proc.kill()
                    return
        finally:
            await _close(sessions)

    asyncio.run(go())


def entries(tables: Tables) -> int:
    return sum(len(v) for v in tables.values())


def _sh(pid: int | None, *cmd: str) -> str:
    argv = ["nsenter", "-t", str(pid), "-n", *cmd] if pid else list(cmd)
    return subprocess.run(argv, capture_output=True, text=True, timeout=20).stdout


def end_cut(pid: int | None, intf: str) -> bool:
    """Does the kernel keep this end from sending: the interface not up, or an nftables
    table dropping at its egress (how a cut keeps BMv2's carrier)?"""
    flags = _sh(pid, "ip", "-o", "link", "show", "dev", intf).split("<", 1)[-1].split(">", 1)[0].split(",")
    if "UP" not in flags:
        return True
    return f"table netdev {cut_table(intf)}" in _sh(pid, "nft", "list", "tables", "netdev")


def cable_cut(ends: LinkEnds) -> bool:
    """Both ends of the cable cut."""
    return end_cut(ends.a_pid, ends.a_intf) and end_cut(ends.b_pid, ends.b_intf)


class CutWatch:
    """In a thread: sessions to every switch opened at once; from when the cable of
    ``ends`` is seen cut until it is seen up again, every table of every switch read
    over and over. ``during`` holds each read that began and ended with the cable cut
    (one that straddled the restore is dropped); ``error`` what went wrong (a read
    that failed, no cut within ``timeout`` s)."""

    def __init__(self, switches: Mapping[str, SwitchTarget], ends: LinkEnds, timeout: float = 120.0) -> None:
        self.switches = dict(switches)
        self.ends = ends
        self.timeout = timeout
        self.during: list[Tables] = []
        self.read_s: list[float] = []
        self.error: str | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cut-watch", daemon=True)

    def start(self) -> CutWatch:
        """Start, and return once the sessions are open (the cut may come at once)."""
        self._thread.start()
        self._ready.wait(60)
        return self

    def join(self) -> CutWatch:
        self._thread.join(self.timeout + 60)
        return self

    def _run(self) -> None:
        try:
            asyncio.run(self._watch())
        except Exception as e:  # reported to the test, which fails on it
            self.error = f"{type(e).__name__}: {e}"
        finally:
            self._ready.set()

    async def _watch(self) -> None:
        sessions = await _open(self.switches)
        self._ready.set()
        try:
            end = time.monotonic() + self.timeout
            while not cable_cut(self.ends):
                if time.monotonic() > end:
                    self.error = f"the cable {self.ends.a_intf}-{self.ends.b_intf} was not seen cut"
                    return
                await asyncio.sleep(0.005)
            while True:
                t0 = time.monotonic()
                tables = await _read_open(sessions)
                if not cable_cut(self.ends):
                    return
                self.during.append(tables)
                self.read_s.append(time.monotonic() - t0)
        finally:
            await _close(sessions)

    def check(self, before: Tables) -> None:
        """Assert: the tables were read at least once while the cable was cut, and
        every such read was exactly ``before`` (which holds entries)."""
        assert self.error is None, self.error
        assert self.during, "no read of the tables fell inside the cut"
        assert entries(before) > 0
        for n, tables in enumerate(self.during):
            changed = {sw for sw in set(before) | set(tables) if before.get(sw) != tables.get(sw)}
            assert not changed, f"tables changed during the cut (read {n + 1} of {len(self.during)}) on {sorted(changed)}"


def link_ends(fn: Any, link: str) -> LinkEnds:
    """The interfaces of ``link``'s cable in a running ``FabricNetwork``."""
    from fabric.paths import find_link

    return fn.inventory.links[find_link(fn.topo, link).name]



def main(argv: list[str]) -> int:
    """``python -m tests.observe STATE_FILE OUT.json``: every table of every switch the
    state file names, read now, written to OUT.json (for a test that drives a network
    through a script, the Mininet CLI's ``sh`` say)."""
    import json
    from pathlib import Path

    from controller.network_state import load

    state, out = map(Path, argv)
    Path(out).write_text(json.dumps(read_tables(load(state).switches), indent=0))
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
