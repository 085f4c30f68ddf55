"""Fabric sizing for ``mrcctl plan``: a multiplane fabric against one plane of the same silicon.

Why: the point of multiplane (docs/architecture.md, "What MRC is") is that splitting an ``nic_gbps`` NIC
into ``planes`` ports of ``port_gbps`` lets the same switch silicon run as ``radix`` ports
of ``port_gbps`` instead of ``radix / planes`` ports of ``nic_gbps``. Higher radix means
fewer tiers, hence fewer switches, fewer optics and shorter paths. This module puts
numbers on that for any GPU count. It is pure arithmetic; the command line prints it.

Rules (standard non-blocking folded Clos, "fat tree"; ``R`` = radix, ``h = R / 2``):

- Every switch below the top tier uses ``h`` ports down and ``h`` up; the top tier uses
  all ``R`` ports down. A ``k``-tier plane therefore holds at most ``R * h**(k-1)``
  (= ``R**k / 2**(k-1)``) hosts: ``R`` in one tier (a single switch), ``R**2 / 2`` in two.
- Tiers: the smallest ``k >= 1`` whose capacity holds all ``N`` hosts.
- Switches per tier for ``N`` hosts (one plane; ceilings, so any ``N`` works):
  one tier: 1 switch. ``k >= 2`` tiers: ``L = ceil(N / h)`` leaves; every tier below
  the top has ``L`` switches too (a tier-``i`` switch takes ``h`` links from below and
  the tier below sends up ``L * h``); the top tier has ``ceil(L * h / R) = ceil(L / 2)``.
  A full fabric is the textbook one (2 tiers of radix 512: 512 leaves, 256 spines); a
  part-filled one is that fabric cut down: pods fill in order, every switch below the
  top is cabled in full (a part-filled leaf keeps all ``h`` uplinks), the top tier's
  used ports are spread as evenly as possible. (The last, part-filled pod of a fabric of
  three or more tiers may reach fewer top switches than the others; paths to it use
  the top switches it reaches.)
- Switch-to-switch links: ``(k - 1) * L * h`` per plane (each tier boundary carries the
  uplinks of ``L`` switches). Host links: one per host per plane (``N * planes``).
- Transceivers: one per switch-to-switch link end, where a transceiver is a module of the
  switch silicon's native port of ``nic_gbps`` (the single-plane port): in the
  multiplane design a switch's ``port_gbps`` ports are lanes of such modules
  (``planes`` lanes each, e.g. an 800G DR8 module as 8 x 100G), so a switch needs
  ``ceil(ports / planes)`` transceivers per direction (up, down). In the single plane a
  transceiver is one link end: transceivers = 2 * links. Host links are counted apart
  (they end in the NIC and are usually cabled differently), not in ``transceivers``.
- Worst-case switch hops: ``2 * k - 1`` (up to the top tier and down again).
- Savings: ``(single - multi) / single`` in percent, one decimal; negative when the
  multiplane needs more (small fabrics: one switch per plane against one switch).

Counts in the report are for the whole fabric (all planes), except ``switches_per_tier``,
which is one plane's (every plane is the same), leaves first.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

TIER_NAMES = ("leaf", "spine", "super-spine")


class SizingError(ValueError):
    """An input the sizer cannot size; the message names the option and the fix."""


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def capacity(radix: int, tiers: int) -> int:
    """Hosts one plane of ``tiers`` tiers of ``radix``-port switches holds: ``R * (R/2)**(k-1)``."""
    return radix * int((radix // 2) ** (tiers - 1))


def tiers_needed(hosts: int, radix: int) -> int:
    """The fewest tiers of ``radix``-port switches (``radix >= 4``) that hold ``hosts``."""
    tiers = 1
    while capacity(radix, tiers) < hosts:
        tiers += 1
    return tiers


def tier_name(tier: int) -> str:
    """``leaf``, ``spine``, ``super-spine``, then ``tier 4``, ... (tiers count from 1)."""
    return TIER_NAMES[tier - 1] if tier <= len(TIER_NAMES) else f"tier {tier}"


@dataclass(frozen=True)
class Fabric:
    """One design: ``planes`` identical planes of ``radix``-port ``port_gbps`` switches."""

    hosts: int
    planes: int
    port_gbps: int
    radix: int
    lanes: int  # switch ports per transceiver
    tiers: int
    switches_per_tier: tuple[int, ...]  # one plane, leaves first
    fabric_links: int  # all planes
    host_links: int  # all planes
    transceivers: int  # all planes

    @property
    def switches(self) -> int:
        """Switches of all planes."""
        return self.planes * sum(self.switches_per_tier)

    @property
    def switch_hops(self) -> int:
        """Switches on the longest shortest path: up to the top tier and down."""
        return 2 * self.tiers - 1

    def to_json(self) -> dict[str, Any]:
        return {
            "tiers": self.tiers,
            "switches": self.switches,
            "switches_per_tier": list(self.switches_per_tier),
            "fabric_links": self.fabric_links,
            "host_links": self.host_links,
            "transceivers": self.transceivers,
        }


def _transceivers_per_plane(switches_per_tier: tuple[int, ...], radix: int, lanes: int) -> int:
    """Transceivers of one plane: per switch and direction, ``ceil(used ports / lanes)``."""
    if len(switches_per_tier) == 1:
        return 0
    half = radix // 2
    leaves, top = switches_per_tier[0], switches_per_tier[-1]
    count = leaves * _ceil_div(half, lanes)  # leaves: uplinks only
    count += sum(switches_per_tier[1:-1]) * 2 * _ceil_div(half, lanes)  # middle tiers: down + up
    fuller, rest = divmod(leaves * half, top)  # top: the tier below's uplinks, spread evenly
    count += rest * _ceil_div(fuller + 1, lanes) + (top - rest) * _ceil_div(fuller, lanes)
    return count


def fabric(hosts: int, planes: int, port_gbps: int, radix: int, lanes: int) -> Fabric:
    """Size ``planes`` planes of ``radix``-port switches for ``hosts`` hosts (rules above)."""
    tiers = tiers_needed(hosts, radix)
    half = radix // 2
    if tiers == 1:
        per_tier: tuple[int, ...] = (1,)
        links = 0
    else:
        leaves = _ceil_div(hosts, half)
        per_tier = (leaves,) * (tiers - 1) + (_ceil_div(leaves, 2),)
        links = (tiers - 1) * leaves * half
    return Fabric(
        hosts=hosts,
        planes=planes,
        port_gbps=port_gbps,
        radix=radix,
        lanes=lanes,
        tiers=tiers,
        switches_per_tier=per_tier,
        fabric_links=planes * links,
        host_links=planes * hosts,
        transceivers=planes * _transceivers_per_plane(per_tier, radix, lanes),
    )


def percent_saved(multi: int, single: int) -> float:
    """``(single - multi) / single`` in percent, one decimal (0 when both are 0)."""
    if single == 0:  # only with one tier, where the multiplane has one tier too: 0 as well
        return 0.0
    return float(round(Fraction(100 * (single - multi), single), 1))


@dataclass(frozen=True)
class Savings:
    """What the multiplane design saves against the single plane, in percent."""

    switches: float
    transceivers: float
    switch_hops: float

    def to_json(self) -> dict[str, float]:
        return {"switches": self.switches, "transceivers": self.transceivers, "switch_hops": self.switch_hops}


@dataclass(frozen=True)
class SizingReport:
    """``mrcctl plan``'s answer: both designs for the same GPUs and switch silicon."""

    gpus: int
    nic_gbps: int
    multiplane: Fabric
    single_plane: Fabric
    savings: Savings

    def to_json(self) -> dict[str, Any]:
        """The object ``mrcctl plan --json`` prints."""
        return {
            "multiplane": self.multiplane.to_json(),
            "single_plane": self.single_plane.to_json(),
            "savings": self.savings.to_json(),
        }

    def notes(self) -> list[str]:
        """One line per design that does not fit two tiers, saying how many it needs."""
        lines = []
        for name, design in (("multiplane", self.multiplane), ("single plane", self.single_plane)):
            if design.tiers > 2:
                lines.append(
                    f"{name}: {self.gpus:,} GPUs do not fit two tiers of {design.radix}-port switches "
                    f"(at most {capacity(design.radix, 2):,}); it needs {design.tiers} tiers"
                )
        return lines


def _positive(value: object, option: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SizingError(f"{option} must be a positive whole number, got {value!r}")
    return value


def _check(gpus: int, nic_gbps: int, planes: int, port_gbps: int, radix: int) -> None:
    for value, option in (
        (gpus, "--gpus"),
        (nic_gbps, "--nic-gbps"),
        (planes, "--planes"),
        (port_gbps, "--port-gbps"),
        (radix, "--radix"),
    ):
        _positive(value, option)
    if nic_gbps % port_gbps:
        raise SizingError(
            f"--nic-gbps {nic_gbps} is not a multiple of --port-gbps {port_gbps}: "
            f"a NIC splits into whole ports; choose a --port-gbps that divides {nic_gbps}"
        )
    if planes * port_gbps != nic_gbps:
        raise SizingError(
            f"--planes {planes} x --port-gbps {port_gbps} = {planes * port_gbps} Gb/s is not "
            f"--nic-gbps {nic_gbps}: each NIC port goes to its own plane; use --planes {nic_gbps // port_gbps}"
        )
    if radix % 2 or radix < 4:
        raise SizingError(
            f"--radix {radix} must be even and at least 4: a leaf uses half its ports down, half up"
        )
    if radix % (2 * planes) or radix < 4 * planes:
        raise SizingError(
            f"--radix {radix} ports of {port_gbps}G do not make a {nic_gbps}G switch for the "
            f"single-plane comparison (--radix / --planes = {Fraction(radix, planes)} ports, "
            f"needs an even number of at least 4): use a --radix that is a multiple of "
            f"{2 * planes} and at least {4 * planes}"
        )


def size(gpus: int, nic_gbps: int, planes: int, port_gbps: int, radix: int) -> SizingReport:
    """Size ``gpus`` GPUs (one NIC each) both ways; raises ``SizingError`` on bad input.

    Multiplane: ``planes`` planes of ``radix`` x ``port_gbps`` switches. Single plane: the
    same switch bandwidth as ``radix / planes`` x ``nic_gbps`` ports, one plane.
    """
    _check(gpus, nic_gbps, planes, port_gbps, radix)
    multi = fabric(gpus, planes, port_gbps, radix, lanes=planes)
    single = fabric(gpus, 1, nic_gbps, radix // planes, lanes=1)
    savings = Savings(
        switches=percent_saved(multi.switches, single.switches),
        transceivers=percent_saved(multi.transceivers, single.transceivers),
        switch_hops=percent_saved(multi.switch_hops, single.switch_hops),
    )
    return SizingReport(gpus=gpus, nic_gbps=nic_gbps, multiplane=multi, single_plane=single, savings=savings)


def rows(report: SizingReport) -> list[tuple[str, str, str, str]]:
    """The comparison as (what, multiplane, single plane, saved) text rows."""
    multi, single, saved = report.multiplane, report.single_plane, report.savings

    def per_tier(design: Fabric, tier: int) -> str:
        return f"{design.switches_per_tier[tier - 1]:,}" if tier <= design.tiers else "-"

    out = [
        ("tiers", str(multi.tiers), str(single.tiers), ""),
        ("worst-case switch hops", str(multi.switch_hops), str(single.switch_hops), f"{saved.switch_hops}%"),
        ("planes", str(multi.planes), str(single.planes), ""),
        (
            "switch",
            f"{multi.radix} x {multi.port_gbps}G",
            f"{single.radix} x {single.port_gbps}G",
            "",
        ),
    ]
    for tier in range(1, max(multi.tiers, single.tiers) + 1):
        out.append((f"{tier_name(tier)} switches per plane", per_tier(multi, tier), per_tier(single, tier), ""))
    out += [
        ("switches", f"{multi.switches:,}", f"{single.switches:,}", f"{saved.switches}%"),
        (
            "switch-to-switch links",
            f"{multi.fabric_links:,} x {multi.port_gbps}G",
            f"{single.fabric_links:,} x {single.port_gbps}G",
            "",
        ),
        (
            "host links",
            f"{multi.host_links:,} x {multi.port_gbps}G",
            f"{single.host_links:,} x {single.port_gbps}G",
            "",
        ),
        (
            f"transceivers ({report.nic_gbps}G)",
            f"{multi.transceivers:,}",
            f"{single.transceivers:,}",
            f"{saved.transceivers}%",
        ),
    ]
    return out


COUNTING_RULE = (
    "transceivers: one per switch-to-switch link end, a module of {nic}G; a {port}G "
    "multiplane port is one of its {lanes} lanes; host links are counted apart"
)
