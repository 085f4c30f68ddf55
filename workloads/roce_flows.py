"""The RoCE baseline's side of the workload agent (``agent.py``): a flow as one RC
queue pair, the responder for every QP arriving at the host, and what a finished QP
tells the runner.

The state machines are the endpoints' own (``endpoints/roce_sender.py``,
``endpoints/roce_receiver.py``), as ``mrc-send``/``mrc-recv --transport roce`` run
them; the QP's EV is the one its 4-tuple hashes onto (``roce_cli.qp_path``: CRC-32 of
the addresses and ports over the EV list MRC-lite would spray over), the same one for
its whole life. A QP whose retries run out is in the error state: its flow ends
failed, with the QP's reason.
"""

from __future__ import annotations

from typing import Any

from endpoints import events, roce_cli
from endpoints.receiver import ReceiverConfig
from endpoints.roce_config import DSCP_DATA, RoceReceiverConfig, RoceSenderConfig
from endpoints.roce_receiver import RoceReceiver
from endpoints.roce_sender import RoceSender
from fabric.plan import EvPath

DSCP = DSCP_DATA  # the class of the QPs' data and of the responder's ACKs and NAKs


def receiver() -> RoceReceiver:
    """The host's responder: any number of QPs, from any peer."""
    return RoceReceiver(RoceReceiverConfig(ReceiverConfig(max_connections=100_000)))


def sender(data: bytes | bytearray, evs: list[EvPath], names: dict[int, str], *, src: str, dst: str, sport: int,
           dport: int, seed: int, ack_timeout: float, now: float) -> tuple[RoceSender, roce_cli.QpPath]:
    """One QP from ``src``:``sport`` to ``dst``:``dport`` on the EV its 4-tuple hashes
    onto; its local ACK timeout at least ``ack_timeout`` (a job's RTO floor: links
    whose queues delay by more than the default timeout)."""
    path = roce_cli.qp_path(src, dst, sport, dport, [e.ev for e in evs], names)
    cfg = RoceSenderConfig(seed=seed, ack_timeout=max(RoceSenderConfig.ack_timeout, ack_timeout))
    return RoceSender(data, path.ev, cfg, now=now), path


def plane_of(evs: list[EvPath], ev: int) -> int:
    return next((e.plane for e in evs if e.ev == ev), -1)


def sent_fields(s: RoceSender, path: roce_cli.QpPath, plane: int) -> dict[str, Any]:
    """The ``sent`` event's figures of a finished QP (the agent's protocol): go-back-N's
    resent packets as its retransmissions, no EV ever retired (one path, never moved),
    the QP's EV and, in the error state, why. The fabric's event collector hears of
    an error as ``mrc-send --transport roce`` tells it (docs/mrcctl.md, "Events")."""
    rep = s.report()
    if s.state == "error":
        events.qp_error(path.path, path.ev, s.error or "error")
    return {"ok": s.ok, "error": s.error, "retransmissions": rep["go_back_n"]["resent"], "evs_retired": [],
            "evs_carried": [], "evs_recovered": [], "per_plane_packets": {str(plane): rep["packets_sent"]},
            "packets_sent": rep["packets_sent"], "qp_ev": path.ev, "source_port": path.sport,
            "qp_state": rep["state"], "timeouts": rep["go_back_n"]["timeouts"],
            "longest_stall_s": rep["longest_stall_s"], "connect_s": rep["connect_s"],
            "opens_sent": rep["control"]["open_sent"]}
