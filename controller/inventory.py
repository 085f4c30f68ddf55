"""Where the switches are: gRPC address, device id and program of every switch.

Why a file: ``mrcctl`` pointed at a running network (Mininet, or switches started by
hand) must reach every switch without repeating the topology. The network writes
``<run dir>/network.json`` (run dir: ``$MRC_P4_RUN_DIR`` or ``/tmp/mrc-p4/run``);
``mrcctl`` reads it. Without one, the default inventory numbers the switches in the
topology's order: device id ``ordinal + 1`` on ``127.0.0.1:<base port + ordinal>``.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from fabric.entries import nodes
from fabric.topology import Topology, TopologyError, from_parameters, load_file

DEFAULT_RUN_DIR = Path("/tmp/mrc-p4/run")
STATE_NAME = "network.json"
DEFAULT_GRPC_BASE = 50001


def run_dir() -> Path:
    """The run directory of switch pid files, logs and the network state file."""
    return Path(os.environ.get("MRC_P4_RUN_DIR", str(DEFAULT_RUN_DIR)))


@dataclass(frozen=True)
class SwitchTarget:
    """One P4Runtime server: switch ``name`` at ``address`` with ``device_id``."""

    name: str
    address: str
    device_id: int
    program: str  # "fabric" or "nic"
    target: str = "embedded"  # "embedded" (p4target run) or "bmv2" (simple_switch_grpc)


@dataclass(frozen=True)
class LinkEnds:
    """The two interfaces of a cable in a running network, for `fail`/`restore`."""

    a_node: str
    a_intf: str
    b_node: str
    b_intf: str
    a_pid: int | None = None  # a process in the node's network namespace; None: the root namespace
    b_pid: int | None = None


@dataclass
class Inventory:
    """The switches of one network, how its topology was given, its links, what is down."""

    switches: dict[str, SwitchTarget]
    topology: dict[str, Any]  # {"file": path} or {"parameters": {...}}
    links: dict[str, LinkEnds] = field(default_factory=dict)
    down: list[str] = field(default_factory=list)  # cables down (mrcctl fail)
    path: Path | None = None  # the state file it was read from / is written to
    denied: list[str] = field(default_factory=list)  # links the NICs avoid (mrcctl deny)

    def load_topology(self) -> Topology:
        if "file" in self.topology:
            return load_file(self.topology["file"])
        return from_parameters(**self.topology.get("parameters", {}))

    def save(self, path: Path | None = None) -> Path:
        path = path or self.path or run_dir() / STATE_NAME
        data = {
            "topology": self.topology,
            "switches": {k: asdict(v) for k, v in self.switches.items()},
            "links": {k: asdict(v) for k, v in self.links.items()},
            "down": sorted(self.down),
            "denied": sorted(self.denied),
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1) + "\n")
        tmp.replace(path)
        self.path = path
        return path


def default_inventory(topo: Topology, topology_source: dict[str, Any], *, host: str = "127.0.0.1",
                      base_port: int = DEFAULT_GRPC_BASE) -> Inventory:
    """Every switch of ``topo`` on ``host:base_port + ordinal``, device id ordinal + 1."""
    switches = {n.name: SwitchTarget(n.name, f"{host}:{base_port + n.ordinal}", n.ordinal + 1, n.program)
                for n in nodes(topo)}
    return Inventory(switches, topology_source)


def load(path: Path) -> Inventory:
    """Read a state file; TopologyError (one line) when it is missing or damaged."""
    try:
        data = json.loads(path.read_text())
        switches = {k: SwitchTarget(**v) for k, v in data["switches"].items()}
        links = {k: LinkEnds(**v) for k, v in data.get("links", {}).items()}
        return Inventory(switches, data["topology"], links, list(data.get("down", [])), path,
                         list(data.get("denied", [])))
    except FileNotFoundError:
        raise TopologyError(f"{path}: no network state file; start a network (make run) or give --topology") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise TopologyError(f"{path}: damaged network state file ({exc}); restart the network or delete the file") from None
