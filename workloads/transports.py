"""The transports a job runs on, each a small value.

- ``mrc``: MRC-lite spraying every packet over the NIC's EVs (adaptive: away from
  EVs with recent congestion echoes and trims), retiring and recovering EVs.
- ``rr``: MRC-lite sprayed round robin (``mrc-send --spray rr``).
- ``perflow``: the per-flow baseline: one EV and a UDP source port of its own per
  flow, to another port than MRC's, so that the NIC does not take it for MRC and
  hashes the flow onto one (plane, spine) path, as ECMP does (experiments/ecmp.py).
- ``roce``: the RoCEv2 RC baseline (``endpoints/roce_sender.py``): each flow one queue
  pair on a UDP source port of its own drawn from the dynamic range, the QP on the one
  EV its 4-tuple hashes onto (``endpoints/ecmp.py``), go-back-N, DCQCN; a QP that runs
  out of retries ends in the error state and its flow fails.

``send_args``/``recv_args`` are the same transport said as ``mrc-send``/``mrc-recv``
options; the workload agent (``agent.py``) runs the endpoints' state machines in one
process per host with the fields below.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from endpoints.ecmp import EPHEMERAL_FIRST, PORT_LAST
from endpoints.wire import UDP_PORT_MRC

PLAIN_PORT = 4792  # not the MRC port: the NIC hashes the flow (docs/nic.md)
FLOW_PORT_BASE = 20000  # per-flow source ports: FLOW_PORT_BASE + flow id


@dataclass(frozen=True)
class Transport:
    name: str
    spray: str = "adaptive"
    per_flow: bool = False  # a socket (source port) of its own per flow
    roce: bool = False  # the RoCEv2 RC baseline's state machines, not MRC-lite's
    send_args: tuple[str, ...] = ()
    recv_args: tuple[str, ...] = ()

    @property
    def port(self) -> int:
        """The receivers' UDP port: MRC's (the NIC reads the EV) but for the per-flow baseline."""
        return PLAIN_PORT if self.per_flow and not self.roce else UDP_PORT_MRC

    def source_port(self, flow: int, seed: int = 0) -> int:
        """The UDP source port of flow ``flow``'s packets (the receiver answers to it):
        a QP's is drawn from the dynamic range by the flow and the seed, as a NIC draws
        it (ports in one aligned block would never collide: CRC-32 is linear)."""
        if self.roce:
            return random.Random(f"qp {flow} {seed}").randint(EPHEMERAL_FIRST, PORT_LAST)
        return FLOW_PORT_BASE + flow % 40000 if self.per_flow else UDP_PORT_MRC


TRANSPORTS: dict[str, Transport] = {
    "mrc": Transport("mrc"),
    "rr": Transport("rr", spray="rr", send_args=("--spray", "rr")),
    "perflow": Transport("perflow", per_flow=True, send_args=(
        "--port", str(PLAIN_PORT), "--source-port", "<per flow>", "--ev-list", "1", "--ev-min-active", "1"),
        recv_args=("--port", str(PLAIN_PORT))),
    "roce": Transport("roce", per_flow=True, roce=True, send_args=("--transport", "roce", "--source-port", "<per flow>"),
                      recv_args=("--transport", "roce")),
}


def transport(name: str) -> Transport:
    if name not in TRANSPORTS:
        raise ValueError(f"transport {name!r}: one of {', '.join(TRANSPORTS)}")
    return TRANSPORTS[name]
