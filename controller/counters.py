"""Counters of the fabric and the NICs over P4Runtime, and the loads derived from them.

Why here: ``mrcctl counters``, ``mrcctl watch``, the Mininet demo and the tests all
read the same counters (docs/fabric.md, docs/nic.md "Counters") and turn them into
per-port, per-plane and per-link figures. Reading is I/O (``read_all``); the
aggregation (``link_loads``, ``plane_loads``, ``delta``) is pure.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from finsy.proto.p4.v1 import p4runtime_pb2

from controller.codec import codec
from controller.p4rt import Session
from controller.pipeline import P4SRC
from controller.targets import SwitchTarget
from fabric import plan as P
from fabric.paths import Link
from fabric.topology import Topology

FABRIC_COUNTERS = ("FabricIngress.rx_port", "FabricEgress.tx_port", "FabricEgress.trimmed", "FabricEgress.ecn_marked",
                   "FabricIngress.drops", "FabricEgress.drops")
NIC_COUNTERS = ("NicIngress.plane_rx", "NicEgress.plane_tx", "NicIngress.drops", "NicEgress.drops")
PORT_COUNTER_SUFFIXES = ("rx_port", "tx_port", "trimmed", "ecn_marked")  # fabric.p4's counters indexed by port

Counts = dict[str, dict[int, tuple[int, int]]]  # counter -> index -> (packets, bytes)


@lru_cache(maxsize=4)
def drop_reasons(program: str) -> dict[int, str]:
    """Drop reason numbers and names, as the program declares them (``const bit<8> DROP_X = n``)."""
    text = (P4SRC / f"{program}.p4").read_text()
    return {int(n): name for name, n in re.findall(r"const\s+bit<8>\s+DROP_(\w+)\s*=\s*(\d+)\s*;", text)}


async def read_switch(t: SwitchTarget, election_id: int = 1) -> Counts:
    """Every counter of one switch (only non-zero cells are kept)."""
    async with Session(t, election_id, primary=False) as s:
        return await read_session(s, t)


async def read_session(s: Session, t: SwitchTarget, ports: Sequence[int] | None = None) -> Counts:
    """Every counter of switch ``t`` over an open session ``s`` (a reader that keeps
    its sessions, such as the web view's, reads through this). ``ports``: a fabric
    switch's per-port counters read at these ports only, all in one request (a reader
    that reads every second asks for the cabled ports, not the program's 512 cells)."""
    c = codec(t.program, t.target)
    names = FABRIC_COUNTERS if t.program == "fabric" else NIC_COUNTERS
    out: Counts = {}
    if ports is None or t.program != "fabric":
        for name in names:
            cells = await s.read_counter(c, name)
            out[name] = {i: v for i, v in cells.items() if v[0] or v[1]}
        return out
    by_id = {c.counters[name][0]: name for name in names}
    entities = [p4runtime_pb2.Entity(counter_entry=p4runtime_pb2.CounterEntry(
        counter_id=cid, index=p4runtime_pb2.Index(index=port))) for cid, name in by_id.items()
        if name.endswith(PORT_COUNTER_SUFFIXES) for port in ports]
    entities += [p4runtime_pb2.Entity(counter_entry=p4runtime_pb2.CounterEntry(counter_id=cid))
                 for cid, name in by_id.items() if not name.endswith(PORT_COUNTER_SUFFIXES)]
    out = {name: {} for name in names}
    for e in await s.read(entities):
        cell, data = e.counter_entry, e.counter_entry.data
        if data.packet_count or data.byte_count:
            out[by_id[cell.counter_id]][cell.index.index] = (data.packet_count, data.byte_count)
    return out


async def read_all(targets: Sequence[SwitchTarget], election_id: int = 1) -> dict[str, Counts]:
    """Counters of every switch, read in parallel (a switch that fails raises SwitchError)."""
    results = await asyncio.gather(*(read_switch(t, election_id) for t in targets))
    return {t.name: r for t, r in zip(targets, results, strict=True)}


def delta(now: dict[str, Counts], before: dict[str, Counts]) -> dict[str, Counts]:
    """``now - before`` cell by cell (a switch that restarted counts from zero)."""
    out: dict[str, Counts] = {}
    for sw, counters in now.items():
        out[sw] = {}
        for name, cells in counters.items():
            old = before.get(sw, {}).get(name, {})
            d = {}
            for i, (p, b) in cells.items():
                op, ob = old.get(i, (0, 0))
                if p < op:  # restarted
                    op, ob = 0, 0
                if p - op or b - ob:
                    d[i] = (p - op, b - ob)
            out[sw][name] = d
    return out


@dataclass(frozen=True)
class LinkLoad:
    link: str
    plane: int
    up_packets: int  # leaf -> spine (or NIC -> leaf)
    down_packets: int  # spine -> leaf (or leaf -> NIC)


def link_loads(topo: Topology, all_links: Sequence[Link], counts: dict[str, Counts]) -> list[LinkLoad]:
    """Packets each cable carried in each direction, from the switches' tx counters."""
    out = []
    for link in all_links:
        if link.kind == "fabric":
            up = counts.get(link.a, {}).get("FabricEgress.tx_port", {}).get(link.a_port, (0, 0))[0]
            down = counts.get(link.b, {}).get("FabricEgress.tx_port", {}).get(link.b_port, (0, 0))[0]
        else:
            up = counts.get(link.a, {}).get("NicEgress.plane_tx", {}).get(link.plane, (0, 0))[0]
            down = counts.get(link.b, {}).get("FabricEgress.tx_port", {}).get(link.b_port, (0, 0))[0]
        out.append(LinkLoad(link.name, link.plane, up, down))
    return out


def plane_loads(topo: Topology, counts: dict[str, Counts]) -> dict[int, int]:
    """Packets the NICs sent into each plane."""
    out = {p: 0 for p in range(topo.planes)}
    for h in topo.hosts:
        for p, (pk, _) in counts.get(h.nic, {}).get("NicEgress.plane_tx", {}).items():
            if p in out:
                out[p] += pk
    return out


def port_rows(topo: Topology, name: str, program: str, counts: Counts) -> list[dict[str, object]]:
    """Per port (fabric) or plane (NIC): rx/tx packets and bytes, trimmed."""
    rows: list[dict[str, object]] = []
    if program == "fabric":
        rx, tx, tr = (counts.get(k, {}) for k in FABRIC_COUNTERS[:3])
        for port in sorted(set(rx) | set(tx) | set(tr)):
            rows.append({"port": port, "rx_packets": rx.get(port, (0, 0))[0], "rx_bytes": rx.get(port, (0, 0))[1],
                         "tx_packets": tx.get(port, (0, 0))[0], "tx_bytes": tx.get(port, (0, 0))[1],
                         "trimmed": tr.get(port, (0, 0))[0]})
    else:
        rx, tx = counts.get("NicIngress.plane_rx", {}), counts.get("NicEgress.plane_tx", {})
        for plane in sorted(set(rx) | set(tx)):
            rows.append({"port": P.nic_plane_port(plane), "plane": plane,
                         "rx_packets": rx.get(plane, (0, 0))[0], "rx_bytes": rx.get(plane, (0, 0))[1],
                         "tx_packets": tx.get(plane, (0, 0))[0], "tx_bytes": tx.get(plane, (0, 0))[1]})
    return rows


def drop_rows(program: str, counts: Counts) -> list[dict[str, object]]:
    names = drop_reasons(program)
    rows = []
    for counter in [k for k in counts if k.endswith(".drops")]:
        for reason, (pk, _) in sorted(counts[counter].items()):
            rows.append({"counter": counter, "reason": reason, "name": names.get(reason, "?"), "packets": pk})
    return rows
