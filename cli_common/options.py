"""The command-line options every command shares, defined once (typer).

Why one module: ``mrcctl``, ``mrc-send``/``mrc-recv``, ``make run``'s runner and the
small Mininet commands all take a topology the same way (``--topology FILE`` or the
shape options, resolved by fabric/resolve.py), and the network commands share
``--run-dir``, ``--target`` and ``--prefix``; each option's name, type and help live
here, so a command that takes one takes it exactly as the others do.
Declarations only, with the checks of two kinds of value every command takes alike
(``seconds``, ``ip_address``: typer callbacks); parsing and printing are the commands'
(command.py, beside this one, runs the project's typer command lines).
"""

from __future__ import annotations

import ipaddress
import math
from pathlib import Path
from typing import Annotated, Literal, Optional, get_args

import typer

from fabric.resolve import Shape

Target = Literal["auto", "embedded", "bmv2"]  # the switch targets a network can run (topologies/p4switch.py)
TARGETS: tuple[str, ...] = get_args(Target)

TopologyOpt = Annotated[Optional[Path], typer.Option(
    "--topology", "-t", metavar="FILE", help="topology file (topologies/*.yaml); default: the Clos of the shape "
    "options, each at the default fabric's value")]
PlanesOpt = Annotated[Optional[int], typer.Option("--planes", help="planes (1..8, default 4)")]
SpinesOpt = Annotated[Optional[int], typer.Option("--spines", help="spines per plane (1..256, default 2)")]
LeavesOpt = Annotated[Optional[int], typer.Option("--leaves", help="leaves per plane (1..512, default 2)")]
HostsPerLeafOpt = Annotated[Optional[int], typer.Option("--hosts-per-leaf", help="hosts per leaf (1..4095, default 2)")]
EvsPerNicOpt = Annotated[Optional[int], typer.Option("--evs-per-nic", help="EVs per NIC (1..256, default 64)")]
EvModeOpt = Annotated[Optional[str], typer.Option("--ev-mode", help="explicit | generated (default explicit)")]
RunDirOpt = Annotated[Optional[Path], typer.Option(
    "--run-dir", metavar="DIR", help="logs, pid files, network.json (default $MRC_P4_RUN_DIR or /tmp/mrc-p4/run)")]
TargetOpt = Annotated[Target, typer.Option(
    "--target",
    help="switch target: BMv2 when simple_switch_grpc and p4c-bm2-ss are on the PATH, else the embedded target "
         "(default auto)")]
NodePrefixOpt = Annotated[str, typer.Option(
    "--prefix", help="Mininet node name prefix: mrc plus up to 4 letters/digits, for a network that must not meet "
                     "another (compact names, e.g. mrc2p0l0); default none: the nodes are called as the controller "
                     "calls them (h1, p0-leaf0, nic1)")]
VerboseOpt = Annotated[bool, typer.Option("--verbose", "-v", help="log what is done")]


def shape(planes: int | None = None, spines: int | None = None, leaves: int | None = None,
          hosts_per_leaf: int | None = None, evs_per_nic: int | None = None, ev_mode: str | None = None) -> Shape:
    """The shape options as the resolver takes them."""
    return Shape(planes, spines, leaves, hosts_per_leaf, evs_per_nic, ev_mode)


# A time option's largest value, a day: socket timeouts and sleeps overflow far above it
# (about 9e9 s), and a run that waits longer than a day for its peer has failed.
MAX_SECONDS = 86400.0


def seconds_problem(value: float | str, *, zero_ok: bool = False) -> str | None:
    """Why ``value`` is not a time option's value: a finite number of seconds above 0
    (or 0 too, ``zero_ok``) and at most ``MAX_SECONDS``; None when it is one (nan, inf
    and 0 never end or never wait)."""
    try:
        number = float(value)
    except ValueError:
        return f"{value!r}: not a number of seconds"
    if (number >= 0 if zero_ok else number > 0) and number <= MAX_SECONDS:  # nan fails both
        return None
    return f"{number:g}: give a number of seconds {'from 0 to' if zero_ok else 'more than 0 and at most'} " \
           f"{MAX_SECONDS:g} (a day)"


def seconds(value: float | str) -> float:
    """A time option's value, more than 0 (a typer ``callback=``); else a usage error."""
    problem = seconds_problem(value)
    if problem is not None:
        raise typer.BadParameter(problem)
    return float(value)


def finite(value: float | None) -> float | None:
    """A rate's, a share's or a duration's value (a typer ``callback=``, with the
    option's own ``min``/``max``): a finite number, or not given; else a usage error
    (an infinite rate or wait never ends, and JSON reports cannot hold it)."""
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"{value:g}: give a finite number")
    return value


def address_problem(value: str) -> str | None:
    """Why ``value`` is not an IPv6 or IPv4 address, as the hosts' are (a name would be
    looked up, or fail, late); None when it is one."""
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return f"{value!r}: give an IPv6 or IPv4 address (e.g. fd00::1 or 127.0.0.1)"
    return None


def ip_address(value: str) -> str:
    """An address option's value (a typer ``callback=``); else a usage error."""
    problem = address_problem(value)
    if problem is not None:
        raise typer.BadParameter(problem)
    return value
