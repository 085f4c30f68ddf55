"""The RoCE baseline requester's report, apart from its state machine
(``endpoints/roce_sender.py``); every field is described in docs/endpoints.md."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from endpoints import wire

if TYPE_CHECKING:
    from endpoints.roce_sender import RoceSender


def sender_report(s: RoceSender) -> dict[str, Any]:
    elapsed = None if s.finished_at is None else s.finished_at - s.start
    c = s.counts
    cc = s.cc
    dcqcn = s.cfg.cc == "dcqcn"
    return {
        "transport": "roce",
        "ok": s.ok,
        "state": "complete" if s.ok else "error",
        "error": s.error,
        "verified": s.verdict == wire.STATE_VERIFIED,
        "bytes": s.length,
        "packets": s.n_packets,
        "mtu": s.cfg.mtu,
        "message_size": s.cfg.message_size,
        "qp": s.qp,
        "first_psn": s.first_psn,
        "ev": s.ev,
        "completion_time_s": elapsed,
        "goodput_bps": (8 * s.length / elapsed) if s.ok and elapsed else None,
        "acked_bytes": s.acked_bytes,
        "packets_sent": c["data_sent"],
        "go_back_n": {
            "rewinds": c["rewinds"],
            "resent": c["resent"],
            "naks_received": c["naks_received"],
            "naks_stale": c["naks_stale"],
            "timeouts": c["timeouts"],
            "retries": c["retries"],
            "retries_most_in_row": c["retries_most_in_row"],
            "retry_count": s.cfg.retry_count,
            "ack_timeout_s": s.cfg.ack_timeout,
        },
        "longest_stall_s": s.longest_stall,
        "connect_s": None if s.connected_at is None else s.connected_at - s.start,
        "acks_received": c["acks_received"],
        "cc": s.cfg.cc,
        "cnps_received": c["cnps_received"],
        "rate_bps": {
            "line": s.cfg.dcqcn.line_rate,
            "min": cc.min_rate if dcqcn else s.cfg.dcqcn.line_rate,
            "final": s.rate,
        },
        "dcqcn": {"alpha": cc.alpha, "target_bps": cc.target, "increases": dict(cc.increases)} if dcqcn else None,
        "control": {"open_sent": c["open_sent"], "status_early": c["status_early"], "late": c["late"]},
        "dropped": dict(s.drops),
        "delivered_series": [[round(t, 6), b] for t, b in s.series],
        "rate_series": [[round(t, 6), r] for t, r in s.rate_series],
    }
