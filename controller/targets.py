"""Where the switches are: the gRPC address, device id and program of each switch.

Why apart from the state file: the P4Runtime client only needs to reach a switch; who
wrote the address down (a running Mininet network's state file, or nobody: the
default numbering) is not its business. Without a state file, switch k (in the
fabric's order, ``fabric.entries.nodes``) is device ``k + 1`` on
``127.0.0.1:<base port + k>``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from pydantic import Field

from fabric.entries import nodes
from fabric.topology import Topology

DEFAULT_GRPC_BASE = 50001


@dataclass(frozen=True)
class SwitchTarget:
    """One P4Runtime server: switch ``name`` at ``address`` with ``device_id``,
    reached over mutual TLS with the client certificate in ``tls_dir`` when given. The
    annotations are the state file's format too: controller/network_state.py checks a file's
    switches against them."""

    name: str
    address: str
    device_id: Annotated[int, Field(ge=0, lt=1 << 64)]  # a P4Runtime uint64
    program: str  # "fabric" or "nic"
    target: str = "embedded"  # "embedded" (p4target run) or "bmv2" (simple_switch_grpc)
    tls_dir: str | None = None  # mutual TLS with the certificates there (controller/tls.py); None: plaintext


def default_targets(topo: Topology, *, host: str = "127.0.0.1",
                    base_port: int = DEFAULT_GRPC_BASE) -> dict[str, SwitchTarget]:
    """Every switch of ``topo`` on ``host:base_port + ordinal``, device id ordinal + 1."""
    return {n.name: SwitchTarget(n.name, f"{host}:{base_port + n.ordinal}", n.ordinal + 1, n.program)
            for n in nodes(topo)}
