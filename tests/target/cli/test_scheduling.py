"""p4target/ports/scheduling.py against the running kernel: nice values and time slices.

A thread of this test process (parked on an event) is set and read back from /proc;
``for_every_thread`` runs in a child Python with threads of its own. Raising a nice
value needs no privilege; lowering one (and the slice, on kernels that have it) is
what a switch process does as root, so those checks need root.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from p4target.ports.scheduling import set_fair, thread_slice_ns

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def parked() -> Iterator[int]:
    """The native id of a thread that waits until the test ends."""
    done = threading.Event()
    t = threading.Thread(target=done.wait, daemon=True)
    t.start()
    assert t.native_id is not None
    yield t.native_id
    done.set()
    t.join()


def test_a_higher_nice_value_is_set_on_that_thread_only(parked: int) -> None:
    mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    set_fair(parked, min(19, mine + 5))
    assert os.getpriority(os.PRIO_PROCESS, parked) == min(19, mine + 5)
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == mine  # Linux: nice is per thread


@pytest.mark.skipif(os.geteuid() != 0, reason="a lower nice value and a time slice need root (CAP_SYS_NICE)")
def test_a_lower_nice_value_and_a_slice_are_set_and_read_back(parked: int) -> None:
    default = thread_slice_ns(threading.get_native_id())
    if default is None:
        pytest.skip("this kernel has no /proc/<tid>/sched to read the slice back")
    set_fair(parked, -5, 300)
    assert os.getpriority(os.PRIO_PROCESS, parked) == -5
    assert thread_slice_ns(parked) == 300_000  # 300 us, in ns
    set_fair(parked, 0)  # back to the kernel's slice
    assert thread_slice_ns(parked) == default and os.getpriority(os.PRIO_PROCESS, parked) == 0


CHILD = """
import os, threading
from p4target.ports.scheduling import for_every_thread, set_fair
stop = threading.Event()
threads = [threading.Thread(target=stop.wait) for _ in range(3)]
for t in threads:
    t.start()
n = for_every_thread(lambda tid: set_fair(tid, 7))
late = threading.Thread(target=stop.wait)  # started afterwards: inherits from the main thread
late.start()
print(n, *(os.getpriority(os.PRIO_PROCESS, int(t)) for t in os.listdir("/proc/self/task")))
stop.set()
"""


def test_every_thread_of_the_process_and_later_ones_get_the_setting() -> None:
    out = subprocess.run([sys.executable, "-c", CHILD], cwd=REPO, capture_output=True, text=True,
                         check=True).stdout.split()
    assert int(out[0]) >= 4  # the main thread and the three started before
    assert out[1:] and all(v == "7" for v in out[1:]) and len(out[1:]) >= 5


@pytest.mark.skipif(os.geteuid() != 0, reason="a real-time policy needs root (CAP_SYS_NICE)")
def test_a_realtime_thread_is_sched_rr_at_its_priority_and_back(parked: int) -> None:
    from p4target.ports.scheduling import set_realtime

    set_realtime(parked, 10)
    assert os.sched_getscheduler(parked) == os.SCHED_RR and os.sched_getparam(parked).sched_priority == 10
    set_fair(parked, 0)
    assert os.sched_getscheduler(parked) == os.SCHED_OTHER and os.sched_getparam(parked).sched_priority == 0
