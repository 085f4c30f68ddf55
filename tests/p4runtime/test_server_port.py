"""A second P4Runtime server on a port already served is refused, not shared.

Why: gRPC sets SO_REUSEPORT by default; two switches started on one port would then
split the connections between them, and a controller would write into whichever
device answered (seen as "device id 8 is not this device (18)").
"""

from __future__ import annotations

import pytest

from p4target.device import Device
from p4target.p4runtime.server import P4RuntimeServer


def test_a_second_server_on_the_same_port_is_refused() -> None:
    first = P4RuntimeServer(Device(device_id=1), "127.0.0.1:0")
    first.start()
    try:
        second = P4RuntimeServer(Device(device_id=2), f"127.0.0.1:{first.bound_port}")
        with pytest.raises(OSError, match=rf"cannot listen on 127.0.0.1:{first.bound_port}; is the port in use\?"):
            second.start()
        second.stop()  # stopping a server that never started is fine
    finally:
        first.stop()
