"""The embedded target's queue options as a BMv2 switch reads them (topologies/bmv2_queues.py).

Why: an experiment sets a queue with ``--queue-rate PORT=PPS`` / ``--queue-depth
PORT=N`` whatever the target; on BMv2 they become Thrift calls, so they must be read
exactly, and a bad one must stop the switch's start with one message naming it.
"""

from __future__ import annotations

import pytest

from controller.errors import SwitchError
from topologies.bmv2_queues import QueueSettings, queue_options


def test_rates_and_depths_are_split_from_the_other_options() -> None:
    got, rest = queue_options(["--queue-rate", "1=800", "--log-level", "info", "--queue-depth", "3=16",
                               "--queue-rate", "2=0.5"], "sw")
    assert got == QueueSettings(rates={1: 800.0, 2: 0.5}, depths={3: 16})
    assert rest == ["--log-level", "info"]
    assert not queue_options([], "sw")[0]


@pytest.mark.parametrize("args", [["--queue-rate", "1=0"], ["--queue-rate", "1"], ["--queue-depth", "x=3"],
                                  ["--queue-depth", "2=-1"], ["--queue-rate"]])
def test_a_bad_setting_names_the_switch_and_the_form(args: list[str]) -> None:
    with pytest.raises(SwitchError, match=r"p0-leaf1: --queue-(rate|depth) .*give PORT=VALUE"):
        queue_options(args, "p0-leaf1")
