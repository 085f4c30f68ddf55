"""What the RoCEv2 baseline's part of an experiment's result must show, on every target.

Why apart from outcomes.py: every experiment now runs the baseline's QPs beside
MRC-lite (experiments/roce.py); their figures are reported whatever they are, so
what is asserted is that they are there and agree with each other and with the
fabric: a complete QP acknowledged every byte, sent every packet once plus its
resends, and its packets went over the one path its EV names; a failed one names its
error and, when its retries ran out, used all of them.
"""

from __future__ import annotations

from typing import Any

from fabric.paths import paths
from fabric.plan import leaf_uplink_port

MTU = 1000  # mrc-send's default payload per packet
RETRY_COUNT = 7  # mrc-send --retry-count's default, the IB spec's 3-bit maximum


def ev_path(fabric: Any, src: str, dst: str, ev: int) -> Any:
    """The fabric's path of ``ev`` from ``src`` to ``dst`` (one of the EV set's)."""
    (p,) = [p for p in paths(fabric.topo, fabric.topo.host(src), fabric.topo.host(dst)) if p.ev == ev]
    return p


def assert_qp_complete(q: dict[str, Any], nbytes: int) -> None:
    """A QP that completed: exit 0, no error, every byte acknowledged, a goodput, and
    the packets it sent are the transfer's packets plus its resends."""
    g = q["go_back_n"]
    assert q["state"] == "complete" and q["exit_code"] == 0 and q["error"] is None, q
    assert q["bytes"] == q["acked_bytes"] == nbytes and q["goodput_bps"] > 0, q
    assert q["packets"] == -(-nbytes // MTU)
    assert q["packets_sent"] == q["packets"] + g["resent"], q
    assert g["rewinds"] <= g["retries"] and g["retry_count"] == RETRY_COUNT, g
    assert g["retries_most_in_row"] <= RETRY_COUNT
    if "delivered_series" in q:  # kept where the experiment plots it
        assert q["delivered_series"][-1][1] == nbytes


def assert_qp_failed_after_retries(q: dict[str, Any], nbytes: int) -> None:
    """A QP whose retries ran out: exit 1, the error says so, the retries in a row are
    the retry count; not every byte acknowledged, no goodput."""
    g = q["go_back_n"]
    assert q["state"] == "error" and q["exit_code"] == 1, q
    assert q["error"].startswith(f"retry count exceeded ({RETRY_COUNT} retries without progress"), q["error"]
    assert g["retries_most_in_row"] == g["retry_count"] == RETRY_COUNT, g
    assert q["acked_bytes"] < nbytes and q["goodput_bps"] is None, q


def assert_qp_failed_on_a_cut(q: dict[str, Any], nbytes: int) -> None:
    """``assert_qp_failed_after_retries``, on a path cut after part of the transfer:
    every retry was a timeout (nothing arrives to NAK), so ``RETRY_COUNT + 1``
    expiries at least, the last finding no retry left; part of the bytes acknowledged."""
    assert_qp_failed_after_retries(q, nbytes)
    assert q["go_back_n"]["timeouts"] >= RETRY_COUNT + 1, q["go_back_n"]
    assert q["acked_bytes"] > 0


def assert_spraying_roce(fabric: Any, d: dict[str, Any], packets: int) -> None:
    """``spraying.run``'s QP: complete, and every data packet it sent out of the source
    NIC in the plane its EV names, none in another (the NIC's ``plane_tx``); on the
    spine link its EV names at least the transfer's packets."""
    r = d["roce"]
    q = r["qp"]
    assert r["ok"], r["summary"]
    assert_qp_complete(q, d["bytes"])
    p = ev_path(fabric, d["src"], d["dst"], q["ev"])
    assert q["source_port"] == 50000
    # the plane's count includes the OPEN and nothing of the other planes
    planes = {int(k): v for k, v in r["planes"].items()}  # (int keys; str once through JSON)
    assert {k: v for k, v in planes.items() if v} == {p.plane: planes[p.plane]}, planes
    assert planes[p.plane] >= q["packets_sent"] >= packets
    assert [k for k, v in r["spine_up"].items() if v] == [p.links[1]], r["spine_up"]  # leaf -> spine


def assert_roce_reported(q: dict[str, Any], nbytes: int) -> None:
    """A QP of an experiment whose outcome is not predicted (congestion, loss): its
    report is there and agrees with itself, complete or failed after its retries."""
    if q["state"] == "complete":
        assert_qp_complete(q, nbytes)
    else:
        assert_qp_failed_after_retries(q, nbytes)


def assert_ecmp_roce(fabric: Any, d: dict[str, Any]) -> None:
    """``ecmp.run``'s QPs: each reported; each on the uplink of the source leaf its EV
    names (``fabric.paths``), which carried at least its packets if it completed;
    nothing of theirs on an uplink no QP hashed onto; the QPs sharing an uplink are those whose
    EVs name the same one."""
    r = d["roce"]
    nbytes = d["bytes_per_flow"]
    hashed: dict[str, list[str]] = {}
    for (src, dst), (name, q) in zip(d["pairs"], r["qps"].items(), strict=True):
        assert name == f"{src}-{dst}"
        assert_roce_reported(q, nbytes)
        p = ev_path(fabric, src, dst, q["ev"])
        assert q["uplink"] == f"{p.hops[1]}:{leaf_uplink_port(fabric.topo, p.spine)}", (q["uplink"], p.hops)
        hashed.setdefault(q["uplink"], []).append(name)
        if q["state"] == "complete":
            assert r["uplink_packets"][q["uplink"]] >= q["packets"]
    # (less than a tenth of a flow's packets: nothing of the QPs, at most a stray packet)
    assert all(v < nbytes // MTU // 10 for k, v in r["uplink_packets"].items() if k not in hashed), r["uplink_packets"]
    assert r["colliding_qps"] == sorted(n for names in hashed.values() if len(names) > 1 for n in names)
    assert r["uplinks_hashed"] == len(hashed)
    assert len({q["source_port"] for q in r["qps"].values()}) == len(r["qps"])


def assert_incast_roce(d: dict[str, Any]) -> None:
    """``incast.run``'s QPs: one per sender, each reported; no trims (the baseline's
    class is never trimmed); what did not go through the limited port is what the
    senders sent less what it carried."""
    r = d["roce"]
    assert list(r["qps"]) == d["senders"]
    for q in r["qps"].values():
        assert_roce_reported(q, d["bytes_per_sender"])
    assert r["trimmed"] == 0
    assert r["packets_sent"] == sum(q["packets_sent"] for q in r["qps"].values())
    assert r["not_through_port"] == r["packets_sent"] - r["sent_through_port"]
    if r["ok"]:
        assert r["sent_through_port"] >= sum(q["packets"] for q in r["qps"].values())


def assert_loss_roce(fabric: Any, d: dict[str, Any]) -> None:
    """``loss_reordering.run``'s QP: on a plane-0 path (the lossy uplinks); reported;
    when it completed, each packet the impairment dropped of it was sent again (so at
    least as many resends) and the receiver NAKed a gap at least once when any was
    dropped."""
    r = d["roce"]
    q = r["qp"]
    assert ev_path(fabric, "h1", "h3", q["ev"]).plane == 0
    assert_roce_reported(q, d["bytes"])
    if q["state"] == "complete" and r["impairment_dropped"]:
        assert q["go_back_n"]["resent"] >= r["impairment_dropped"] > 0
        assert q["receiver"]["naks"] >= 1 and q["go_back_n"]["rewinds"] >= 1


def assert_adaptive_roce(fabric: Any, d: dict[str, Any]) -> None:
    """``adaptive.run``'s QP: its EV's path leaves p0-leaf0 towards p0-spine0 (the slow
    port); reported; when complete every packet of it left the slow port at least
    once; none trimmed."""
    r = d["roce"]
    q = r["qp"]
    p = ev_path(fabric, d["src"], d["dst"], q["ev"])
    assert p.hops[1:3] == ("p0-leaf0", "p0-spine0") and r["ev"] == q["ev"]
    assert_roce_reported(q, d.get("roce_bytes", d["bytes"]))
    assert r["slow_port_trimmed"] == 0
    if q["state"] == "complete":
        assert r["ok"] and r["slow_port_packets"] >= q["packets"]
