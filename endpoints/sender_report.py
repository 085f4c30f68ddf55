"""The sender's report (docs/endpoints.md, "Report"): what a transfer did, as JSON-ready
values, read from the state machine (``endpoints/sender.py``) and its parts."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from endpoints.sender import Sender


def sender_report(s: Sender) -> dict[str, Any]:
    """Everything an experiment needs from the sender ``s``."""
    end = s.finished_at
    elapsed = (end - s.start) if end is not None else None
    per_plane: Counter[int] = Counter()
    for st in s.evs.values():
        per_plane[st.path.plane] += st.sent
    return {
        "ok": s.ok,
        "error": s.error,
        "bytes": s.length,
        "mtu": s.cfg.mtu,
        "packets": s.n_packets,
        "completion_time_s": elapsed,
        "goodput_bps": (8 * s.length / elapsed) if elapsed else None,
        "packets_sent": s.data_sent,
        "retransmissions": {
            "total": s.counts["data_retransmitted"],
            "timeout": s.counts["retransmit_timeout"],
            "nack": s.counts["retransmit_nack"],
            "trim_nack": s.counts["retransmit_trim"],
        },
        "control": {"acks_received": s.acks_received,
                    **{k: s.counts[k] for k in ("open_sent", "probes_sent", "probe_replies",
                                                "nacks_received", "trim_nacks_received", "ce_echoes",
                                                "status_early", "late", "trim_nacks_late", "ev_losses_forgiven",
                                                "ev_losses_taken_back")},
                    "adaptive_skips": s.spray.skips},
        "spray": s.cfg.spray,
        "dropped": dict(s.drops),
        "rto_s": s.rtt.rto,
        "window": {"max": s.cfg.window, "now": s.cc.cwnd, "min": s.cc.cwnd_min,
                   "halved": s.counts["window_halved"], "base_rtt_s": s.cc.base_rtt,
                   "target_s": s.cc.target, "reactions": dict(s.cc.counts)},
        "srtt_s": s.rtt.srtt,
        "retire_delay_s": s.cfg.retire_delay,
        "evs_retired": sum(st.retired for st in s.evs.values()),
        "evs_recovered": sum(st.recovered for st in s.evs.values()),
        "ev_events": list(s.events),
        "per_plane_packets": {str(p): n for p, n in sorted(per_plane.items())},
        "per_ev": s.ev_set.report(),
        "delivered_series": [[round(t, 6), b] for t, b in s.series],
    }
