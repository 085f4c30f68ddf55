"""Fixtures of the hostile-client suite: one server process per transport (``h2`` on
loopback in plaintext, ``tls`` the same behind mutual TLS), with the healthy client
that checks it, and the bar every attack is held to (``Bar``), the same on both.

``HOSTILE_TRANSPORTS`` (comma-separated keys of ``harness.TRANSPORTS``, default
``h2,tls``) runs the suite against others: ``grpc`` and ``grpc-tls`` are grpcio's own
server, which does not meet the bar (docs/performance.md says where)."""

from __future__ import annotations

import os
import time

import pytest

from tests.p4runtime.hostile.harness import Served, Watch, serve

RSS_GROWTH_KB = 64 * 1024
IDLE_WINDOW = 0.3      # seconds of CPU sampled, idle and after an attack
IDLE_MARGIN = 0.09     # CPU seconds over the idle baseline in that window: about 30 % of a core
SETTLE = 3.0           # how long after an attack the server may take to be idle again
FIGURES: list[tuple] = []
TRANSPORTS = os.environ.get("HOSTILE_TRANSPORTS", "h2,tls").split(",")


@pytest.fixture(scope="module", params=TRANSPORTS)
def served(request: pytest.FixtureRequest, rt_config: tuple) -> Served:
    box = [serve(request.param, rt_config)]
    yield box
    box[0].healthy.close()
    box[0].target.stop()


class Bar:
    """Runs one attack against the served server and asserts what every attack must
    leave true: the server alive, the healthy client answered correctly within its
    deadline during and after, RSS (peak too) under ``RSS_GROWTH_KB`` more, CPU back
    to the idle baseline within ``SETTLE`` s, no traceback in the log."""

    def __init__(self, box: list, rt_config: tuple, name: str) -> None:
        if not box[0].target.alive():  # an earlier case killed it: a new one for this case
            box[0] = serve(box[0].transport, rt_config, box[0].limits)
        self.s: Served = box[0]
        self.name = name
        self.tls = self.s.target.tls is not None

    def __call__(self, attack, *args, **kwargs):
        s, target = self.s, self.s.target
        idle = s.cpu_over(IDLE_WINDOW)
        log_start = len(target.log())
        rss0 = target.rss_kb()
        target.reset_peak()
        s.healthy.latencies.clear()
        with Watch(s.healthy) as watch:
            result = attack(target, *args, **kwargs)
            time.sleep(0.2)  # at least one round of healthy calls while the attack's state is there
        during = max(s.healthy.latencies, default=float("nan"))
        assert target.alive(), f"the server died:\n{target.log()[log_start:]}"
        assert not watch.failures, f"the healthy client failed during the attack: {watch.failures[:3]}"
        assert watch.rounds > 0, "the healthy client completed no round during the attack"
        s.healthy.check()
        peak, rss1 = target.peak_kb(), target.rss_kb()
        deadline, busy = time.monotonic() + SETTLE, None
        while True:
            busy = s.cpu_over(IDLE_WINDOW)
            if busy <= idle + IDLE_MARGIN or time.monotonic() > deadline:
                break
        FIGURES.append((self.name, target.name, rss0 // 1024, rss1 // 1024, peak // 1024,
                        round(during * 1000)))
        assert busy <= idle + IDLE_MARGIN, f"CPU not back to idle: {busy:.2f} s in {IDLE_WINDOW} s (idle {idle:.2f})"
        assert peak - rss0 < RSS_GROWTH_KB, f"RSS peak grew {(peak - rss0) // 1024} MB"
        assert rss1 - rss0 < RSS_GROWTH_KB, f"RSS grew {(rss1 - rss0) // 1024} MB"
        new_log = target.log()[log_start:]
        assert "Traceback" not in new_log, new_log
        return result


@pytest.fixture
def bar(served: list, rt_config: tuple, request: pytest.FixtureRequest) -> Bar:
    return Bar(served, rt_config, request.node.originalname)


def pytest_sessionfinish(session: pytest.Session) -> None:
    if FIGURES:
        print("\nhostile clients: attack, transport, RSS MB before/after/peak, healthy worst latency ms")
        for row in FIGURES:
            print("  %-28s %-12s %5d %5d %5d %6d" % row)
