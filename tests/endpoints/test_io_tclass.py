"""The I/O layer's traffic classes on real loopback sockets: an endpoint's socket
sends in its class (the RoCE baseline's DSCP 26, ECT(0)), and a packet given a class
of its own (the baseline's CNPs, DSCP 48) leaves in it, one or a run of several."""

from __future__ import annotations

import os
import random
import time

import pytest

from endpoints import io
from endpoints.transport import Tx
from tests.endpoints.test_io_sockets import receive

RNG = random.Random(os.getpid() ^ int(time.time()) ^ 0x5A)
CNP_CLASS = 48 << 2 | 0b10
DATA_CLASS = 26 << 2 | 0b10


@pytest.mark.parametrize("addr", ["::1", "127.0.0.1"])
def test_socket_class_and_per_packet_class(addr: str) -> None:
    port = RNG.randrange(20000, 60000)
    rx = io.listen(addr, port, want_tclass=True)
    rx.setblocking(True)
    sender = io.listen(addr, 0, want_tclass=False, dscp=26)
    try:
        stats: dict[str, int] = {}
        out = [Tx(1, b"\x11\0\0\0data"), Tx(2, b"\x81\0\0\0cnp1", None, CNP_CLASS),
               Tx(3, b"\x81\0\0\0cnp2", None, CNP_CLASS), Tx(4, b"\x11\0\0\0more")]
        io.Transmitter(sender).send(out, (addr, port), stats)
        got = [receive(rx) for _ in out]
        assert [(d[4:], tclass) for d, _addr, tclass in got] == [
            (b"data", DATA_CLASS), (b"cnp1", CNP_CLASS), (b"cnp2", CNP_CLASS), (b"more", DATA_CLASS)]
        assert [int.from_bytes(d[2:4], "big") for d, _a, _t in got] == [1, 2, 3, 4]  # each EV in its pkey
        assert stats == {}
    finally:
        sender.close()
        rx.close()


def test_the_mrc_lite_class_is_unchanged() -> None:
    port = RNG.randrange(20000, 60000)
    rx = io.listen("127.0.0.1", port, want_tclass=True)
    rx.setblocking(True)
    sender = io.listen("127.0.0.1", 0, want_tclass=False)
    try:
        io.Transmitter(sender).send([Tx(9, b"\x0a\0\0\0x")], ("127.0.0.1", port), {})
        assert receive(rx)[2] == io.ECT0  # DSCP 0, ECT(0)
    finally:
        sender.close()
        rx.close()
