"""Clients that attack the TLS layer of a server speaking mutual TLS (``tls_attacks``),
held to the bar of ``conftest.Bar`` as every attack is: handshake floods without a
valid certificate, slow handshakes, stalled records."""

from __future__ import annotations

import pytest

from tests.p4runtime.hostile import tls_attacks
from tests.p4runtime.hostile.conftest import TRANSPORTS
from tests.p4runtime.hostile.harness import SCALE, Served, serve
from tests.p4runtime.hostile.harness import TRANSPORTS as TRANSPORTS_BY_NAME

OK = "0"
MAX_HANDSHAKES = 64  # ServerLimits' default: handshakes under way at once


@pytest.fixture(scope="module", params=[t for t in TRANSPORTS if TRANSPORTS_BY_NAME[t][1]] or ["tls"])
def served(request: pytest.FixtureRequest, rt_config: tuple) -> Served:
    box = [serve(request.param, rt_config)]
    yield box
    box[0].healthy.close()
    box[0].target.stop()


def test_handshake_flood_without_a_valid_certificate(bar) -> None:
    reached, kept = bar(tls_attacks.handshake_flood, SCALE)
    assert reached == 0, f"{reached} clients without a valid certificate got HTTP/2 answers"
    assert kept == 0, f"{kept} connections that sent a random record were not closed"


def test_slow_handshakes(bar) -> None:
    """150 handshakes held open: the server keeps at most its limit of them (it drops
    the oldest for each new one), and a new client with a valid certificate gets in
    and is answered meanwhile."""
    status, closed, finished = bar(tls_attacks.slow_handshakes, SCALE)
    assert status == OK
    assert finished == 0
    assert closed >= 150 * SCALE - MAX_HANDSHAKES, closed


def test_stalled_records(bar) -> None:
    assert bar(tls_attacks.stalled_records, SCALE) == 0
