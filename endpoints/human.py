"""Figures for the commands' human lines (``endpoints/cli.py``, ``endpoints/roce_cli.py``)."""

from __future__ import annotations


def human_bps(bps: float | None) -> str:
    """A rate in bits per second with its unit (Gb/s, Mb/s, kb/s, b/s); "-" for none."""
    if not bps:
        return "-"
    for unit, scale in (("Gb/s", 1e9), ("Mb/s", 1e6), ("kb/s", 1e3)):
        if bps >= scale:
            return f"{bps / scale:.2f} {unit}"
    return f"{bps:.0f} b/s"
