"""What every mrcctl command shares (controller/cli.py, controller/ops_cli.py): the
consoles, the error for a person (``Fail``), and the topology and switch inventory
the global options select (``Source``)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer
from rich.console import Console

from controller.network_state import Inventory, default_inventory, load, state_path
from fabric.paths import find_link
from fabric.resolve import Shape, damaged_state, resolve
from fabric.topology import TopologyError

out = Console(width=None if sys.stdout.isatty() else 200)
err = Console(stderr=True, soft_wrap=True)


class Fail(Exception):
    """An error for a person: printed as one line, exit status 1."""


class Source:
    """The topology and the switch inventory the options select."""

    def __init__(self, topology: Path | None, shape: Shape, state: Path | None) -> None:
        state_file = state or state_path()
        chosen = resolve(topology, shape, state=state, running=state_file)
        self.topo = chosen.topology
        self.other_network: Path | None = None  # a running network of another topology
        self.running = chosen.state is not None  # the inventory is a running network's (its state file's)
        if chosen.state is not None:
            self.inventory = self._checked(load(chosen.state), chosen.state)
            return
        self.inventory = default_inventory(self.topo, chosen.source)
        self.inventory.path = state_file
        if state_file.exists():  # a running network of the same shape: use its addresses and failures
            try:
                running = load(state_file)
                same = running.load_topology() == self.topo
            except TopologyError:
                return
            if not same:
                self.other_network = state_file
                return
            self.inventory, self.running = self._checked(running, state_file), True

    def _checked(self, inv: Inventory, path: Path) -> Inventory:
        """``inv``, read from the state file ``path``, when every link it has down or
        denied is one of the topology's."""
        for field, names in (("down", inv.down), ("denied", inv.denied)):
            for name in names:
                try:
                    find_link(self.topo, name)
                except TopologyError:
                    raise damaged_state(path, f"{field}: no link {name!r} in topology {self.topo.name!r}") from None
        return inv

    @property
    def inv(self) -> Inventory:
        return self.inventory


def source_of(ctx: typer.Context) -> Source:
    """The ``Source`` the global options made (every command but `plan`)."""
    src = ctx.obj
    assert isinstance(src, Source)  # main_options made it (every command but `plan`)
    return src


def running_source(ctx: typer.Context, what: str) -> Source:
    """The options' topology and inventory, refused when another topology's network runs."""
    s = source_of(ctx)
    if s.other_network is not None:
        raise Fail(f"a network of another topology is running ({s.other_network}); give --state to {what} it, "
                   "or stop it first")
    return s
