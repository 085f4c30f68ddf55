"""A running network's run directory and state file.

Why a file: ``mrcctl`` pointed at a running network (Mininet, or switches started by
hand) must reach every switch without repeating the topology. The network writes
``<run dir>/network.json`` (run dir: ``$MRC_P4_RUN_DIR`` or ``/tmp/mrc-p4/run``),
with every switch's address, how its topology was given, its cables' interfaces and
what is down or denied; ``mrcctl`` reads it. The switches' logs and pid files live in
the same directory. Why in the controller package: the file says where the switches
are (``SwitchTarget``, controller/targets.py) and ``mrcctl`` reads it without the
Mininet package, which writes it (topologies/fabric_net.py).
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from controller.targets import SwitchTarget, default_targets
from fabric.resolve import TopologySource, damaged_state, read_state, topology_of
from fabric.topology import Topology, TopologyError

DEFAULT_RUN_DIR = Path("/tmp/mrc-p4/run")
RUN_DIR_ENV = "MRC_P4_RUN_DIR"
STATE_NAME = "network.json"


def run_dir() -> Path:
    """The run directory of switch pid files, logs and the network state file."""
    return Path(os.environ.get(RUN_DIR_ENV, str(DEFAULT_RUN_DIR)))


def state_path() -> Path:
    """The default state file: ``<run dir>/network.json``."""
    return run_dir() / STATE_NAME


@dataclass(frozen=True)
class LinkEnds:
    """The two interfaces of a cable in a running network, for `fail`/`restore`."""

    a_node: str
    a_intf: str
    b_node: str
    b_intf: str
    a_pid: int | None = None  # a process in the node's network namespace; None: the root namespace
    b_pid: int | None = None
    a_server: str | None = None  # user@address of the server the end is on (a cluster); None: here
    b_server: str | None = None


@dataclass
class Inventory:
    """The switches of one network, how its topology was given, its links, what is down."""

    switches: dict[str, SwitchTarget]
    topology: TopologySource  # {"file": path} or {"parameters": {...}}
    links: dict[str, LinkEnds] = field(default_factory=dict)
    down: list[str] = field(default_factory=list)  # cables down (mrcctl fail)
    path: Path | None = None  # the state file it was read from / is written to
    denied: list[str] = field(default_factory=list)  # links the NICs avoid (mrcctl deny)

    def load_topology(self) -> Topology:
        return topology_of(self.topology)

    def save(self, path: Path | None = None) -> Path:
        path = path or self.path or state_path()
        data = {
            "topology": self.topology,
            "switches": {k: asdict(v) for k, v in self.switches.items()},
            "links": {k: asdict(v) for k, v in self.links.items()},
            "down": sorted(self.down),
            "denied": sorted(self.denied),
        }
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_whole(path, json.dumps(data, indent=1) + "\n")
        except OSError as e:
            raise TopologyError(f"{path}: cannot write the network state file ({e.strerror}); free space on "
                                "its filesystem or make it writable, then run the command again") from None
        self.path = path
        return path


def default_inventory(topo: Topology, topology_source: TopologySource, **where: Any) -> Inventory:
    """Every switch of ``topo`` at its default address (controller/targets.py)."""
    return Inventory(default_targets(topo, **where), topology_source)


def write_whole(path: Path, text: str) -> None:
    """``text`` into ``path`` through a temporary file renamed over it: a reader sees
    the old file or the new one, whole. On a full or read-only filesystem the OSError
    is raised with the old file as it was and no temporary file left."""
    tmp = path.with_suffix(".tmp")
    try:
        tmp.write_text(text)
        tmp.replace(path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise


def load(path: Path) -> Inventory:
    """Read a state file; TopologyError (one line) when it is missing or damaged."""
    data = read_state(path)
    try:
        f = _STATE_FILE.validate_python(data)
    except ValidationError as exc:
        e, more = exc.errors()[0], len(exc.errors()) - 1
        where = ".".join(str(k) for k in e["loc"])
        raise damaged_state(path, f"{where}: {e['msg']}{f' (and {more} more)' if more else ''}") from None
    return Inventory(f.switches, data["topology"], f.links, f.down, path, f.denied)


@dataclass
class _StateFile:
    """The fields of a state file ``load`` reads, typed: the switches and cables as
    ``SwitchTarget`` and ``LinkEnds`` declare them (keys it does not know are left alone)."""

    topology: dict[str, Any]  # how the topology was given: fabric/resolve.py's TopologySource
    switches: dict[str, SwitchTarget]
    links: dict[str, LinkEnds] = field(default_factory=dict)
    down: list[str] = field(default_factory=list)  # link names, checked against the topology by their reader
    denied: list[str] = field(default_factory=list)


_STATE_FILE = TypeAdapter(_StateFile)
