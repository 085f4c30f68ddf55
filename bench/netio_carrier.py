"""How soon a switch learns that a port lost its carrier (rtnetlink, not the link poll).

A Device runs bench/p4/router6.p4 behind NetIO on the bench lab's veths (p4tin as
port 1, p4tout as port 2, in a private namespace), with the slow link poll set to an
hour, so only the kernel's RTM_NEWLINK notification can tell it. Each round takes the
peer of port 2 (p4tsnk) down and measures the time until ``port_is_up(2)`` is False,
then brings it up and measures the time until it is True again. The test suite
checks only that the notification is what tells the switch
(tests/target/cli/test_device.py). Prints only; run as root:
``.venv/bin/python bench/netio_carrier.py [ROUNDS]``.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _vethlab import REPO, VethLab, require_root

sys.path.insert(0, str(REPO))

from p4target.compiler import compile_file
from p4target.device import Device
from p4target.ports.netio import NetIO


def _until(pred, timeout: float = 10.0) -> float:
    """Seconds until ``pred()`` holds (polled every 0.2 ms), or the timeout."""
    t0 = time.monotonic()
    while not pred():
        if time.monotonic() - t0 > timeout:
            raise RuntimeError("the switch never saw the link change")
        time.sleep(0.0002)
    return time.monotonic() - t0


def main() -> int:
    if not require_root():
        return 0
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    program = compile_file(REPO / "bench" / "p4" / "router6.p4")
    with VethLab() as lab:
        dev = Device(device_id=1)
        dev.load(program)
        nio = NetIO(dev, {1: "p4tin", 2: "p4tout"}, netns=lab.ns, poll_interval=3600)
        nio.start()
        try:
            _until(lambda: dev.switch.port_is_up(2))
            down, up = [], []
            for _ in range(rounds):
                t0 = time.monotonic()
                subprocess.run(["ip", "-n", lab.ns, "link", "set", "p4tsnk", "down"], check=True)
                down.append(time.monotonic() - t0 + _until(lambda: not dev.switch.port_is_up(2)))
                t0 = time.monotonic()
                subprocess.run(["ip", "-n", lab.ns, "link", "set", "p4tsnk", "up"], check=True)
                up.append(time.monotonic() - t0 + _until(lambda: dev.switch.port_is_up(2)))
        finally:
            nio.stop()
            nio.join(5)
    print(f"carrier change to port state, {rounds} rounds (from the `ip link set` command, which is included):")
    for what, xs in (("down", down), ("up", up)):
        print(f"  {what:>4}: min {min(xs) * 1e3:6.1f} ms, median {statistics.median(xs) * 1e3:6.1f} ms, "
              f"max {max(xs) * 1e3:6.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
