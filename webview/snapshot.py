"""One second of the fabric as the page shows it, from counters and the state file (pure).

Why pure: the links' states (up, cable down, denied) come from the running network's
state file, their loads from two readings of the switches' counters a known time
apart (``controller.counters``: the same figures ``mrcctl watch`` prints); turning
those into what the page and ``/metrics`` show does no I/O, so it is tested on values
written out in the test.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from controller import counters as C
from webview.model import Drawing

UP, DOWN, DENIED, DOWN_DENIED = "up", "down", "denied", "down+denied"
QDEPTH_REGISTER = "FabricEgress.max_qdepth"


def link_state(name: str, down: Collection[str], denied: Collection[str]) -> str:
    """``up``, ``down`` (its cable is cut), ``denied`` (the NICs avoid it) or both."""
    if name in down:
        return DOWN_DENIED if name in denied else DOWN
    return DENIED if name in denied else UP


def links_now(drawing: Drawing, down: Collection[str], denied: Collection[str],
              rates: Mapping[str, C.Counts] | None, dt: float) -> list[list[Any]]:
    """Per link of ``drawing.links``, in order: [state, packets/s up, packets/s down]
    (up: leaf to spine or NIC to leaf), the loads None without counters."""
    loads = C.link_loads(drawing.topo, drawing.links, dict(rates)) if rates is not None else None
    out: list[list[Any]] = []
    for i, k in enumerate(drawing.links):
        state = link_state(k.name, down, denied)
        if loads is None or dt <= 0:
            out.append([state, None, None])
        else:
            out.append([state, round(loads[i].up_packets / dt, 1), round(loads[i].down_packets / dt, 1)])
    return out


def nic_rx_rates(drawing: Drawing, rates: Mapping[str, C.Counts], dt: float) -> dict[str, float]:
    """Bytes/s each NIC received from the fabric (all planes), for the page's chart."""
    out: dict[str, float] = {}
    for h in drawing.topo.hosts:
        cells = rates.get(h.nic, {}).get("NicIngress.plane_rx", {})
        out[h.nic] = round(sum(b for _, b in cells.values()) / dt, 1) if dt > 0 else 0.0
    return out


def _cell(counts: C.Counts, counter: str, index: int) -> tuple[int, int]:
    return counts.get(counter, {}).get(index, (0, 0))


def switch_ports(drawing: Drawing, name: str, program: str, counts: C.Counts, rates: C.Counts | None, dt: float,
                 qdepth: Mapping[int, int] | None) -> dict[str, Any]:
    """A switch's ports for the page's panel: per port its cable and peer, packets in
    and out (totals and per second), trims, CE marks and deepest queue (fabric
    switches), and the switch's drops by reason."""
    if program == "fabric":
        names = {"rx": "FabricIngress.rx_port", "tx": "FabricEgress.tx_port", "trimmed": "FabricEgress.trimmed",
                 "ce_marked": "FabricEgress.ecn_marked"}
        wired = sorted(port for (sw, port) in drawing.ports if sw == name)
        index = {port: port for port in wired}
    else:
        names = {"rx": "NicIngress.plane_rx", "tx": "NicEgress.plane_tx"}
        index = {port: port - 1 for (sw, port) in drawing.ports if sw == name}  # plane port -> plane
        wired = sorted(index)
    seen = set(wired) | {i for k in names.values() for i in counts.get(k, {})} if program == "fabric" else set(wired)
    rows = []
    for port in sorted(seen):
        end = drawing.ports.get((name, port))
        row: dict[str, Any] = {"port": port, "link": end.link if end else None, "peer": end.peer if end else None}
        for key, counter in names.items():
            row[f"{key}_packets"] = _cell(counts, counter, index.get(port, port))[0]
            if rates is not None and dt > 0 and key in ("rx", "tx"):
                row[f"{key}_pps"] = round(_cell(rates, counter, index.get(port, port))[0] / dt, 1)
        if program == "fabric":
            row["max_qdepth"] = None if qdepth is None else qdepth.get(port, 0)
        rows.append(row)
    return {"switch": name, "program": program, "ports": rows, "drops": C.drop_rows(program, counts)}
