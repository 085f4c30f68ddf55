"""The RoCEv2 RC baseline's side of every experiment: its command-line arguments, the
figures read from its reports, and the check that those figures agree with each other.

Why one module: every experiment runs the baseline (``mrc-send --transport roce``,
docs/endpoints.md) through the same ``Transfer`` as MRC-lite, between the same hosts,
with the same bytes and the same packet rate; only the arguments differ, and what is
kept of a QP's report is the same everywhere: its state, its one EV, its go-back-N
figures, its longest stall, its CNPs, its progress over time. The baseline's figures
are reported whatever they are: no experiment's acceptance asks anything of them but
that the report is there and says one consistent thing (``problems``).
"""

from __future__ import annotations

import random
import subprocess
import time
from collections.abc import Sequence
from typing import Any

from endpoints.wire import DATA_HDR_LEN

TRANSPORT = ["--transport", "roce"]
MTU = 1000  # mrc-send's default payload per packet, MRC-lite's and the baseline's alike


EPHEMERAL = (49152, 65535)  # where a NIC draws a QP's source port


def random_ports(n: int, seed: str) -> list[int]:
    """``n`` distinct QP source ports drawn at random from the dynamic range, the same
    for the same ``seed`` (ports in an aligned block would not collide: CRC-32 is
    linear, docs/transport.md)."""
    return random.Random(seed).sample(range(EPHEMERAL[0], EPHEMERAL[1] + 1), n)


def line_rate_mbps(pps: float, mtu: int = MTU) -> float:
    """``--line-rate`` (Mb/s) that paces the baseline at ``pps`` packets/s: it paces
    each packet's payload and data header (endpoints/roce_sender.py), MRC-lite's
    ``--rate`` counts packets."""
    return pps * (mtu + DATA_HDR_LEN) * 8 / 1e6


def send_args(pps: float, *, path_ev: int | None = None, source_port: int | None = None,
              extra: Sequence[str] = ()) -> list[str]:
    """``mrc-send`` arguments of one QP starting (DCQCN) at ``pps`` packets/s, on the
    EV ``path_ev`` (a source port whose hash lands there) or source port ``source_port``."""
    where = ([] if path_ev is None else ["--path-ev", str(path_ev)]) + \
        ([] if source_port is None else ["--source-port", str(source_port)])
    return [*TRANSPORT, "--line-rate", f"{line_rate_mbps(pps):g}", *where, *extra]


def qp(send: dict[str, Any], recv: dict[str, Any] | None = None, code: int | None = None) -> dict[str, Any]:
    """What an experiment keeps of one QP: its sender's report (``send``), the
    receiver's connection for it (``recv``), and mrc-send's exit status (``code``)."""
    g = send.get("go_back_n") or {}
    counts = (recv or {}).get("counts") or {}
    return {"state": send.get("state"), "error": send.get("error"), "exit_code": code,
            "ev": send.get("ev"), "source_port": send.get("source_port"),
            "path": (send.get("ecmp") or {}).get("path"),
            "completion_time_s": send.get("completion_time_s"), "goodput_bps": send.get("goodput_bps"),
            "bytes": send.get("bytes"), "acked_bytes": send.get("acked_bytes"),
            "packets": send.get("packets"), "packets_sent": send.get("packets_sent"),
            "go_back_n": {k: g.get(k) for k in ("rewinds", "resent", "naks_received", "timeouts", "retries",
                                                "retries_most_in_row", "retry_count", "ack_timeout_s")},
            "longest_stall_s": send.get("longest_stall_s"), "cnps_received": send.get("cnps_received"),
            "rate_bps": send.get("rate_bps"),
            "receiver": {k: counts.get(k) for k in ("naks", "cnps", "ce", "out_of_sequence", "duplicates")},
            "delivered_series": send.get("delivered_series", []), "rate_series": send.get("rate_series", [])}


def qps(res: Any) -> list[dict[str, Any]]:
    """Every QP of one ``TransferResult`` (an incast has several into one receiver),
    each with the receiver's connection from the same sender (matched by QP number)."""
    conns = {c.get("sender_qp"): c for c in res.recv_report.get("connections") or []}
    return [qp(s, conns.get(s.get("qp")), code) for s, code in zip(res.send_reports, res.send_codes, strict=False)]


def problems(q: dict[str, Any]) -> list[str]:
    """Where a QP's figures disagree with each other or with its state (empty: none).

    Complete: exit 0, every byte acknowledged, a goodput. Error: exit 1, the error
    named, and for retry exhaustion the retries in a row equal to the retry count.
    Complete: packets sent = packets + resends; either way a retry for every rewind (a
    retry with nothing sent past its PSN goes back nowhere)."""
    out = []
    g = q["go_back_n"]
    if q["state"] == "complete":
        if q["exit_code"] != 0 or q["acked_bytes"] != q["bytes"] or not q["goodput_bps"] or q["error"]:
            out.append(f"complete, yet exit {q['exit_code']}, {q['acked_bytes']} of {q['bytes']} bytes acknowledged, "
                       f"goodput {q['goodput_bps']}, error {q['error']!r}")
    elif q["state"] == "error":
        if q["exit_code"] != 1 or not q["error"]:
            out.append(f"error, yet exit {q['exit_code']} and error {q['error']!r}")
        if "retry count exceeded" in (q["error"] or "") and g["retries_most_in_row"] != g["retry_count"]:
            out.append(f"retry count exceeded after {g['retries_most_in_row']} retries in a row, "
                       f"not {g['retry_count']}")
    else:
        out.append(f"state {q['state']!r}: no report, or neither complete nor error")
        return out
    if q["packets_sent"] != (q["packets"] or 0) + (g["resent"] or 0) and q["state"] == "complete":
        out.append(f"{q['packets_sent']} packets sent, not {q['packets']} + {g['resent']} resent")
    if (g["rewinds"] or 0) > (g["retries"] or 0):
        out.append(f"{g['rewinds']} rewinds but {g['retries']} retries")
    return out


def outcome(q: dict[str, Any]) -> str:
    """A QP's outcome in words: complete (and how long it stood still), or failed."""
    g = q["go_back_n"]
    stall = q["longest_stall_s"] or 0.0
    if q["state"] == "complete":
        return (f"complete in {q['completion_time_s'] or 0:.2f} s, {(q['goodput_bps'] or 0) / 1e6:.2f} Mb/s; "
                f"longest stall {stall:.2f} s; go-back-N: {g['rewinds']} rewinds, {g['resent']} resent, "
                f"{g['naks_received']} NAKs, {g['timeouts']} timeouts")
    return (f"FAILED ({q['state']}): {q['error']}; {q['acked_bytes']} of {q['bytes']} bytes acknowledged, "
            f"longest stall {stall:.2f} s, {g['timeouts']} timeouts, {g['retries_most_in_row']} of "
            f"{g['retry_count']} retries in a row")


def brief(q: dict[str, Any]) -> dict[str, Any]:
    """``q`` without its time series (for a results file that keeps one series only)."""
    return {k: v for k, v in q.items() if k not in ("delivered_series", "rate_series")}


def wait(tr: Any, grace: float = 2.0) -> Any:
    """``tr.wait()``, except that once every sender has exited and one of them failed
    (a QP in the error state: its receiver is never told, and would wait for its
    ``--timeout``), the receiver gets ``grace`` seconds and is then stopped."""
    deadline = time.monotonic() + tr.timeout + 30
    while time.monotonic() < deadline and any(p.poll() is None for p in tr.senders):
        time.sleep(0.05)
    if any(p.returncode not in (0, None) for p in tr.senders) and tr.receiver is not None:
        try:
            tr.receiver.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            tr.receiver.terminate()
    return tr.wait()


def run_transfer(fn: Any, src: str, dst: str, nbytes: int, workdir: Any, send: Sequence[str],
                 recv: Sequence[str] = (), timeout: float = 120.0) -> Any:
    """One QP's transfer (``send``: ``send_args``' list; ``recv``: mrc-recv's own
    arguments), started and waited for as ``wait`` does."""
    from topologies.transfer import Transfer

    return wait(Transfer(fn, src, dst, nbytes, workdir, list(send), [*TRANSPORT, *recv], timeout).start())
