"""Parser shapes the spec allows (P4_16 13): states with no statements at all.

A parser whose start state, or a chain of states from it, has nothing but its
transition to ``accept`` once made the compiler emit an empty Python block.
Expected: nothing is extracted, so the header is invalid in ingress (port 2) and the
deparser emits nothing of it: the frame leaves unchanged.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from p4target import Switch

P4 = Path(__file__).parent / "p4"


PROG = P4 / "parser_empty_states.p4"


def test_stf_through_the_command() -> None:
    out = subprocess.run([sys.executable, "-m", "p4target", "stf", str(PROG),
                          str(P4 / "parser_empty_states.stf")], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr + out.stdout
    assert out.stdout.startswith("PASS")


def test_scapy_frame_leaves_unchanged_on_port_2() -> None:
    frame = bytes(Ether(dst="00:00:00:00:00:02", src="00:00:00:00:00:01") / IP(dst="10.0.0.1") / UDP())
    out = Switch.load(PROG).inject(7, frame)
    assert out == [(2, frame)]
