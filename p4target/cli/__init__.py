"""The ``p4target`` command: the typer application (``app``), what ``run`` does once
its options are parsed (``run``), and the parsers of option values (``values``)."""

from p4target.cli.app import main

__all__ = ["main"]
