"""Which topology a command works on: the one resolver every command line uses.

A topology comes from exactly one of: a topology file (``--topology FILE``), the
shape options (``--planes --spines --leaves --hosts-per-leaf --evs-per-nic
--ev-mode``, unset ones at the default fabric's values), or a running network's state
file (which records how its topology was given). Giving two of them is a mistake, told
in one line. The state file's location and its values belong to the Mininet package
(controller/network_state.py); here it is only read for the one key that names the topology.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from fabric.topology import Topology, TopologyError, from_parameters, load_file

TopologySource = dict[str, Any]  # {"file": absolute path} or {"parameters": {shape option: value}}


@dataclass(frozen=True)
class Shape:
    """The shape options; None: the default fabric's value."""

    planes: int | None = None
    spines: int | None = None
    leaves: int | None = None
    hosts_per_leaf: int | None = None
    evs_per_nic: int | None = None
    ev_mode: str | None = None

    def given(self) -> dict[str, Any]:
        """The options that were set, by parameter name."""
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass(frozen=True)
class Resolved:
    """The topology, how a state file records it, and the state file it came from."""

    topology: Topology
    source: TopologySource
    state: Path | None = None  # the running network's state file, when it came from one


def _options(names: list[str]) -> str:
    return ", ".join("--" + k.replace("_", "-") for k in names)


def topology_of(source: TopologySource) -> Topology:
    """The topology a state file's ``topology`` record names."""
    if "file" in source:
        return load_file(source["file"])
    return from_parameters(**source.get("parameters", {}))


def topology_source(topo: Topology) -> TopologySource:
    """How a state file records ``topo``: its file, or every Clos parameter."""
    if topo.source != "parameters":
        return {"file": str(Path(topo.source).resolve())}
    return {"parameters": {"planes": topo.planes, "spines": topo.spines, "leaves": len(topo.leaves),
                           "hosts_per_leaf": topo.max_hosts_per_leaf, "evs_per_nic": topo.evs_per_nic,
                           "ev_mode": topo.ev_mode, "trim_threshold": topo.trim_threshold,
                           "no_trim": topo.trim_threshold is None, "trim_classes": list(topo.trim_classes)}}


def read_state(path: Path) -> dict[str, Any]:
    """The state file at ``path`` as a JSON object; TopologyError (one line) when it is
    missing or not one. Its fields' types are checked where they are read
    (controller/network_state.py ``load``)."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise TopologyError(f"{path}: no network state file; start a network (make run) or give --topology") from None
    except (OSError, ValueError, RecursionError) as exc:
        raise damaged_state(path, exc) from None
    if not isinstance(data, dict):
        raise damaged_state(path, "not a JSON object")
    return data


def damaged_state(path: Path, why: object) -> TopologyError:
    """The one-line error for a state file that cannot be used."""
    return TopologyError(f"{path}: damaged network state file ({why}); restart the network or delete the file")


def state_source(path: Path) -> TopologySource:
    """The ``topology`` record of the state file at ``path`` (TopologyError when missing
    or damaged)."""
    source = read_state(path).get("topology")
    if not isinstance(source, dict):
        raise damaged_state(path, "no topology record")
    return source


def resolve(topology: Path | None = None, shape: Shape = Shape(), *, state: Path | None = None,
            running: Path | None = None) -> Resolved:
    """The topology the options select.

    ``topology``: a file; ``shape``: the shape options; ``state``: a state file given
    explicitly (``--state``); ``running``: the default state file, used when nothing
    else is given and it exists (``mrcctl`` next to a running network). Neither file
    nor shape nor state: the default fabric."""
    given = shape.given()
    if state is not None and (topology is not None or given):
        raise TopologyError("give --state (a running network, which knows its topology) or a topology, not both")
    if topology is not None and given:
        raise TopologyError(f"give --topology or the shape options ({_options(list(given))}), not both")
    from_state = state if state is not None else (
        running if topology is None and not given and running is not None and running.exists() else None)
    if from_state is not None:
        source = state_source(from_state)
        try:
            return Resolved(topology_of(source), source, from_state)
        except TopologyError as exc:
            if "file" in source:
                raise  # the topology file's own line names it
            raise damaged_state(from_state, f"topology.{exc}") from None
    if topology is not None:
        return Resolved(load_file(topology), {"file": str(topology.resolve())})
    return Resolved(from_parameters(**given), {"parameters": given})
