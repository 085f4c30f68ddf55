"""The `make run` demo's RoCE baseline: after the MRC-lite transfer, the same bytes on
one RoCEv2 RC queue pair whose one path crosses the cut cable, cut and restored at the
same points; the summary gives MRC-lite's line and the baseline's.

The root test runs `make run` as a person does and checks the summary's two lines
against the baseline's own report (kept in the run directory, ``demo-roce/``) and
against what a QP on a dead path must show: the ECMP hash (CRC-32 of the 4-tuple,
written out here with ``zlib``) lands its source port on its EV, that EV's path holds
the cut cable, and a QP whose only path died cannot have gone on without at least one
local ACK timeout and one go-back-N rewind. The other tests check the verdict and the
wording without a network.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import subprocess
import zlib
from pathlib import Path
from typing import Any

import pytest

from tests.mininet.net_prefix import assert_nothing_left, private_prefix
from topologies.demo import FlowResult, RoceResult, format_roce, roce_ok

REPO = Path(__file__).resolve().parents[2]
ACK_TIMEOUT_S = 4.096e-6 * 2**16  # the IB local ACK timeout the baseline uses by default (attribute 16)
ROCE_LINE = re.compile(r"^    RoCE baseline, one QP on EV (\d+) across the cut: (.*)$", re.M)
DETAIL = re.compile(r"^      QP source port (\d+) \(CRC-32 of its 4-tuple lands on EV (\d+)\), path (.+?); cut after "
                    r"(\d+) packets from the source NIC, restored after (\d+).*; report (\S+)$", re.M)
MRC_LINE = re.compile(r"^    MRC-lite, sprayed over (\d+) EVs: complete in ([\d.]+) s; EVs retired (\d+) of (\d+) "
                      r"across the cut", re.M)


def _env() -> dict[str, str]:
    """The environment without the make variables of a `make test` around this run."""
    return {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}


def _crc_ev(src: str, dst: str, sport: int, evs: list[int]) -> int:
    """ECMP's choice written out: CRC-32 over both addresses and both UDP ports (RoCE's 4791)."""
    key = ipaddress.ip_address(src).packed + ipaddress.ip_address(dst).packed + sport.to_bytes(2, "big") \
        + (4791).to_bytes(2, "big")
    return evs[zlib.crc32(key) % len(evs)]


def _check_roce_line(out: str, report: dict[str, Any]) -> None:
    line = ROCE_LINE.search(out)
    assert line, out
    assert int(line.group(1)) == report["ev"]
    g = report["go_back_n"]
    # a QP whose one path is dead makes no progress until the cable is back: its
    # outstanding packets wait for a local ACK timeout and are sent again from the oldest
    assert g["timeouts"] >= 1 and g["rewinds"] >= 1 and g["resent"] >= 1, g
    assert report["longest_stall_s"] >= ACK_TIMEOUT_S, report["longest_stall_s"]
    resends = f"{g['rewinds']} go-back-N rewinds, {g['resent']} packets resent"
    stall = f"stalled {report['longest_stall_s']:.2f} s"
    if report["state"] == "complete":
        assert report["verified"] is True
        assert line.group(2).startswith(f"complete in {report['completion_time_s']:.2f} s after it {stall}, {resends}")
    else:
        assert report["state"] == "error" and "retry count exceeded" in report["error"], report
        assert line.group(2).startswith(f"FAILED after its 7 retries ({report['acked_bytes']:,} of 1,000,000 bytes "
                                        f"acknowledged), {stall}, {resends}"), line.group(2)


@pytest.mark.root
def test_make_run_shows_the_same_cut_under_mrc_lite_and_the_roce_baseline(tmp_path: Path) -> None:
    prefix = private_prefix()
    try:
        res = subprocess.run(
            ["make", "--no-print-directory", "run", f"RUN_DIR={tmp_path}",
             f"RUN_ARGS=--prefix {prefix} --grpc-base 0 --bytes 1000000 --no-cli"],
            cwd=REPO, env=_env(), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)
        out = res.stdout
        # the baseline's failure, if it fails, is the demo's point: the result stays OK
        assert res.returncode == 0, out + res.stderr
        assert "result: OK" in out
        cut = re.search(r"^  the same cut \((\S+)\) during two transfers of 1,000,000 bytes h1 -> h3:$", out, re.M)
        assert cut, out
        mrc = MRC_LINE.search(out)
        assert mrc and int(mrc.group(1)) == 64, out  # the default fabric's 64 EVs per NIC
        # over 4 planes x 2 spines = 8 paths, EV k on plane k mod 4: 8 of the 64 EVs cross
        # one cable, and MRC-lite retires none but those
        assert int(mrc.group(4)) == 8 and int(mrc.group(3)) <= 8, mrc.group(0)
        detail = DETAIL.search(out)
        assert detail, out
        report_path = Path(detail.group(6))
        assert report_path.parent == tmp_path / "demo-roce"
        report = json.loads(report_path.read_text())
        assert report["transport"] == "roce"
        sport, ev = int(detail.group(1)), int(detail.group(2))
        assert (sport, ev) == (report["source_port"], report["ev"])
        e = report["ecmp"]
        assert _crc_ev(e["src"], e["dst"], sport, _evs(e, ev)) == ev
        # the cable "a:b" joins two switches next to each other on the QP's path
        a, b = cut.group(1).split(":")
        hops = detail.group(3).split()
        assert a in hops and b in hops and abs(hops.index(a) - hops.index(b)) == 1, (cut.group(1), hops)
        # the same points as MRC-lite's: half of the 1,000 packets, then three quarters (resends count)
        at_cut, at_restore = int(detail.group(4)), int(detail.group(5))
        assert 500 <= at_cut < 750 <= at_restore or report["state"] == "error", (at_cut, at_restore)
        _check_roce_line(out, report)
    finally:
        assert_nothing_left(prefix, tmp_path)


def _evs(ecmp: dict[str, Any], ev: int) -> list[int]:
    """The sender's EV list as its report gives it: ``evs`` entries, ``ev`` at ``index``."""
    assert ecmp["evs"] == 64 and 0 <= ecmp["index"] < 64
    # the address plan's 64 EVs of h1 towards h3, explicit EVs: 0x1000 + k (docs/addressing.md)
    evs = [0x1000 + k for k in range(64)]
    assert evs[ecmp["index"]] == ev
    return evs


def _flow() -> FlowResult:
    return FlowResult("h1", "h3", 4000, True, {"completion_time_s": 4.2}, 8, {}, {}, {}, {}, "p0-leaf0:p0-spine0",
                      crossing=[4096], retired=[4096])


def _roce(report: dict[str, Any]) -> RoceResult:
    return RoceResult("h1", "h3", 4000, 4096, 49160, "p0-leaf0:p0-spine0", ("nic1", "p0-leaf0", "p0-spine0"),
                      report.get("state") == "complete", report, Path("/run/demo-roce/send-h1-h3.json"), None)


FAILED = {"state": "error", "ev": 4096, "source_port": 49160, "acked_bytes": 2000, "longest_stall_s": 2.15,
          "go_back_n": {"rewinds": 8, "resent": 16, "naks_received": 0, "timeouts": 8, "retry_count": 7}}


def test_a_failed_qp_is_the_demos_point_not_its_failure() -> None:
    assert roce_ok(_roce(FAILED)) is True
    assert roce_ok(_roce({**FAILED, "state": "complete"})) is True


@pytest.mark.parametrize("report", [{}, {**FAILED, "ev": 4097}, {**FAILED, "source_port": 49161},
                                    {**FAILED, "state": None}])
def test_no_report_or_another_qp_fails_the_demo(report: dict[str, Any]) -> None:
    assert roce_ok(_roce(report)) is False


def test_the_summary_gives_both_transports_on_the_same_cut() -> None:
    lines = format_roce(_roce(FAILED), _flow())
    assert lines[:3] == [
        "the same cut (p0-leaf0:p0-spine0) during two transfers of 4,000 bytes h1 -> h3:",
        "  MRC-lite, sprayed over 8 EVs: complete in 4.20 s; EVs retired 1 of 1 across the cut, the others kept the "
        "transfer going",
        "  RoCE baseline, one QP on EV 4096 across the cut: FAILED after its 7 retries (2,000 of 4,000 bytes "
        "acknowledged), stalled 2.15 s, 8 go-back-N rewinds, 16 packets resent (0 NAKs, 8 timeouts)"]
    done = {**FAILED, "state": "complete", "completion_time_s": 3.5, "longest_stall_s": 1.3}
    assert format_roce(_roce(done), _flow())[2] == (
        "  RoCE baseline, one QP on EV 4096 across the cut: complete in 3.50 s after it stalled 1.30 s, 8 go-back-N "
        "rewinds, 16 packets resent (0 NAKs, 8 timeouts)")
    assert "NO REPORT" in format_roce(_roce({}), _flow())[2]
