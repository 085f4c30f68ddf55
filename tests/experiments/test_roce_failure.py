"""The link-failure experiment with the RoCEv2 baseline beside MRC-lite
(experiments/failure.py ``run_all`` with ``roce_down_for``), on the embedded target.

Asserted, from first principles: MRC-lite's transfer on the cut completes with
exactly the crossing EVs retired and none healthy (outcomes.py); the baseline's QP
is put on a path that crosses the cut cable (its EV the lowest of those that do); with the cable down for less than the 8 local ACK
timeouts (8 x 0.268 s) after which its retries run out, it stands still while the
cable is down and resumes after the restore, every byte verified; down for 4 s,
longer than that, its retries run out before the restore: the error state, exit 1,
7 retries in a row, every one a timeout.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.experiments.outcomes import assert_cut_cable_outcome
from tests.experiments.roce_outcomes import assert_qp_complete, assert_qp_failed_on_a_cut

pytestmark = pytest.mark.root
pytest.importorskip("mininet.net")

LINK = "p0-leaf0:p0-spine0"
NBYTES = 4_000_000  # the MRC-lite run long enough to see every crossing EV back after the restore
ACK_TIMEOUT = 4.096e-6 * 2**16  # mrc-send --ack-timeout's default, 0.268 s: the IB timeout attribute 16
RETRY_COUNT = 7
SAMPLE = 0.01  # the sender's series of acknowledged bytes: a sample each 10 ms at most (RoceSenderConfig)


def test_a_cut_qp_resumes_after_a_short_cut_and_fails_on_a_long_one_mrc_retires_no_healthy_ev(
        fabric, tmp_path: Path) -> None:
    from experiments import failure

    gives_up = (RETRY_COUNT + 1) * ACK_TIMEOUT  # 2.15 s without progress
    short, long = 0.5, 4.0
    assert short < gives_up < long
    d = failure.run_all(fabric, tmp_path, links=(LINK,), seeds=(1,), nbytes=NBYTES, rate=4000, cut_at=0.25,
                        down_for=0.4, roce_down_for=(short, long))
    # 64 EVs over 8 (plane, spine) paths, EV k on plane k mod 4 and spine k div 4 mod 2
    # (fabric/plan.py): the 8 EVs k = 0, 8, 16, ... cross plane 0's spine 0.
    crossing = [0x1000 + 8 * k for k in range(8)]
    assert_cut_cable_outcome(fabric, d, crossing, "nic1 > p0-leaf0 > p0-spine0 > p0-leaf1")
    assert failure.acceptable(d)
    resumed, failed = d["roce"]
    for r, down in ((resumed, short), (failed, long)):
        assert r["link"] == LINK and r["ev"] == crossing[0] and r["qp"]["ev"] == crossing[0], r["summary"]
        assert r["qp"]["path"] is not None and "p0-spine0" in str(r["qp"]["path"])
        assert r["down_for_s"] == down and 0 < r["cut_t"] < r["restore_t"]
        assert r["gives_up_after_s"] == pytest.approx(gives_up)
    # short: stood still across the cut, progress again only after the restore, complete
    assert resumed["outcome"] == "resumed after the restore", resumed["summary"]
    assert_qp_complete(resumed["qp"], NBYTES)
    assert resumed["received_file_matches"]
    assert resumed["last_progress_before_restore_t"] < resumed["restore_t"] < resumed["resumed_t"]
    # stood_still_s is read off the QP's series of acknowledged bytes, sampled at the
    # send loop's first turn SAMPLE seconds or more after the last sample: progress
    # shows there, so the sampled stand-still may exceed the sender's own exact longest
    # stall by a sample and the loop's next turn (allowed: two samples)
    assert resumed["qp"]["longest_stall_s"] >= resumed["stood_still_s"] - 2 * SAMPLE and resumed["stood_still_s"] > 0
    assert resumed["qp"]["go_back_n"]["timeouts"] >= 1 and resumed["qp"]["go_back_n"]["resent"] > 0
    # long: the retries ran out while the cable was down
    assert failed["outcome"] == "failed after retries", failed["summary"]
    assert_qp_failed_on_a_cut(failed["qp"], NBYTES)
    assert not failed["received_file_matches"] and failed["resumed_t"] is None
    assert failed["qp"]["completion_time_s"] < failed["restore_t"]  # the error came before the restore
    assert fabric.reload_inventory().down == []
