"""The transports a job runs on, each a small value.

- ``mrc``: MRC-lite spraying every packet over the NIC's EVs (adaptive: away from
  EVs with recent congestion echoes and trims), retiring and recovering EVs.
- ``rr``: MRC-lite sprayed round robin (``mrc-send --spray rr``).
- ``perflow``: the per-flow baseline: one EV and a UDP source port of its own per
  flow, to another port than MRC's, so that the NIC does not take it for MRC and
  hashes the flow onto one (plane, spine) path, as ECMP does (experiments/ecmp.py).

``send_args``/``recv_args`` are the same transport said as ``mrc-send``/``mrc-recv``
options; the workload agent (``agent.py``) runs the endpoints' state machines in one
process per host with the fields below.
"""

from __future__ import annotations

from dataclasses import dataclass

from endpoints.wire import UDP_PORT_MRC

PLAIN_PORT = 4792  # not the MRC port: the NIC hashes the flow (docs/nic.md)
FLOW_PORT_BASE = 20000  # per-flow source ports: FLOW_PORT_BASE + flow id


@dataclass(frozen=True)
class Transport:
    name: str
    spray: str = "adaptive"
    per_flow: bool = False  # one EV, a source port per flow, to PLAIN_PORT
    send_args: tuple[str, ...] = ()
    recv_args: tuple[str, ...] = ()

    @property
    def port(self) -> int:
        return PLAIN_PORT if self.per_flow else UDP_PORT_MRC

    def source_port(self, flow: int) -> int:
        """The UDP source port of flow ``flow``'s packets (the receiver answers to it)."""
        return FLOW_PORT_BASE + flow % 40000 if self.per_flow else UDP_PORT_MRC


TRANSPORTS: dict[str, Transport] = {
    "mrc": Transport("mrc"),
    "rr": Transport("rr", spray="rr", send_args=("--spray", "rr")),
    "perflow": Transport("perflow", per_flow=True, send_args=(
        "--port", str(PLAIN_PORT), "--source-port", "<per flow>", "--ev-list", "1", "--ev-min-active", "1"),
        recv_args=("--port", str(PLAIN_PORT))),
}


def transport(name: str) -> Transport:
    if name not in TRANSPORTS:
        raise ValueError(f"transport {name!r}: one of {', '.join(TRANSPORTS)}")
    return TRANSPORTS[name]
