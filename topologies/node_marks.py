"""Marks that tie processes in Mininet nodes to the project, for cleanup after a crash.

A process started inside a Mininet host (a switch, an endpoint, a daemon someone
detached with `setsid`) can outlive the host's shell. Once Mininet has deleted the
host's veth, nothing in its network namespace names the project any more. So every
node of ours exports `MRC_P4_NODE=<node name>` in its shell; every process started
there inherits it, and `tools/cleanup.py` (`make clean`) finds them by it.
"""

from __future__ import annotations

from typing import Protocol

NODE_ENV = "MRC_P4_NODE"


class ShellNode(Protocol):
    """What we need of a Mininet node: a name and a shell to run commands in."""

    name: str

    def cmd(self, *args: str) -> str: ...


def mark_node(node: ShellNode) -> None:
    """Export the project's node mark in the node's shell (inherited by what it starts)."""
    node.cmd(f"export {NODE_ENV}={node.name}")
