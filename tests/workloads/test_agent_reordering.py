"""A workload agent's receiving side keeps what a peer's connection learned about the
paths' spread: a packet held back 200 ms makes the first transfer's receiver NACK it
and then widen its reordering window when it arrives after all; the next transfer
from the same peer starts with that window (and so sends no NACK for a packet late
by less), where a fresh connection would start again at the 5 ms NACK delay.

Real sockets on loopback, the agent's own loop steps (``read`` then ``poll`` as of
the read), the endpoints' real ``Sender`` on the other side; the test holds back
one data packet itself."""

from __future__ import annotations

import io as text_io
import json
import random
import socket
import time

from endpoints import io
from endpoints.cli import pseudo_random
from endpoints.transport import Receiver, Sender, SenderConfig, Tx
from endpoints.wire import OP_WRITE, UDP_PORT_MRC
from fabric.plan import EvPath
from fabric.resolve import Shape, resolve
from workloads.agent import Agent, Options
from workloads.transports import transport

EVS = [EvPath(4096 + k, -1, -1) for k in range(8)]
HOLD = 0.2  # seconds the test holds back one data packet (a loaded machine stalls less than that)


def transfer(agent: Agent, sock: socket.socket, seed: int, hold: int | None) -> None:
    """One transfer from ``sock`` to the agent, data packet ``hold`` delivered HOLD
    seconds late (a resend of it twice as late, so that the first one arrives first)."""
    tx = io.Transmitter(sock, gso=False)
    to = (agent.opts.listen, UDP_PORT_MRC)
    s = Sender(pseudo_random(seed, 30_000), EVS, SenderConfig(seed=seed), now=time.monotonic())
    held: list[tuple[float, Tx]] = []
    buf = bytearray(io.RECV_BUF)
    deadline = time.monotonic() + 20
    while not s.finished:
        now = time.monotonic()
        assert now < deadline, "the transfer did not end"
        while True:
            try:
                n = sock.recv_into(buf)
            except BlockingIOError:
                break
            s.on_packet(memoryview(buf)[:n], now)
        for p in s.poll(now):
            idx = (int.from_bytes(p.payload[9:12], "big") - s.first_psn) & 0xFFFFFF
            if p.payload[0] == OP_WRITE and idx == hold:  # its resends later still: the first one is late
                held.append((now + HOLD * (1 + (len(held) > 0)), p))
            else:
                tx.send([p], to, {})
        for due, p in [h for h in held if h[0] <= now]:
            held.remove((due, p))
            tx.send([p], to, {})
        agent.read(agent.sock, now)
        agent.poll(now)
        time.sleep(0.0005)
    assert s.ok


def test_a_peers_next_connection_starts_with_the_window_its_last_one_learned() -> None:
    base = f"127.{random.randrange(1, 250)}.{random.randrange(1, 250)}"
    topo = resolve(None, Shape(planes=2, spines=1, leaves=2, hosts_per_leaf=1)).topology
    out = text_io.StringIO()
    agent = Agent(Options("h2", f"{base}.1", transport("mrc"), topo, nack_delay=0.005), out=out)
    sock = io.listen(f"{base}.2", UDP_PORT_MRC, want_tclass=False)
    try:
        transfer(agent, sock, 1, hold=10)
        assert isinstance(agent.receiver, Receiver)
        first = list(agent.receiver.conns.values())[0]
        # NACKed once its hole was 5 ms old, it arrived HOLD seconds after it was sent:
        # the window became twice its lateness, at least 2 x (HOLD - 5 ms)
        assert first.counts["nacks"] >= 1 and first.counts["spurious_nacks"] == 1
        assert 2 * (HOLD - 0.005) <= first.reorder <= 1.0
        transfer(agent, sock, 2, hold=None)
        second = list(agent.receiver.conns.values())[1]
        assert second.reorder == first.reorder and second.counts["nacks"] == 0
    finally:
        sock.close()
        agent.sock.close()
    recvs = [json.loads(line) for line in out.getvalue().splitlines() if '"recv"' in line]
    assert [r["verified"] for r in recvs] == [True, True]


def test_a_message_starts_with_the_evs_a_running_one_found_bad() -> None:
    """The next message to a host starts with the EVs the connection's transfers hold
    ASSUMED_BAD, the one still running included (a ring's next message starts before
    its last one's sender has its verdict); a message to another host does not."""
    base = f"127.{random.randrange(1, 250)}.{random.randrange(1, 250)}"
    topo = resolve(None, Shape(planes=2, spines=1, leaves=2, hosts_per_leaf=2)).topology  # h1, h2 | h3, h4
    agent = Agent(Options("h1", f"{base}.1", transport("mrc"), topo), out=text_io.StringIO())
    try:
        now = time.monotonic()
        agent.send(1, "h3", f"{base}.3", 30_000, now)
        (running,) = agent.flights.values()
        assert isinstance(running.sender, Sender)
        bad = sorted(running.sender.evs)[5]
        running.sender.ev_set.retire(bad, "nack", now)  # what two loss NACKs about its packets do
        agent.send(2, "h3", f"{base}.3", 30_000, now)
        agent.send(3, "h4", f"{base}.4", 30_000, now)
        by_flow = {f.flow: f.sender for f in agent.flights.values()}
        assert isinstance(by_flow[2], Sender) and isinstance(by_flow[3], Sender)
        assert [ev for ev, st in by_flow[2].evs.items() if st.state == "assumed_bad"] == [bad]
        assert [e["cause"] for e in by_flow[2].ev_set.events if e.get("event") == "retired"] == ["carried"]
        assert all(st.state == "good" for st in by_flow[3].evs.values())
    finally:
        agent.sock.close()
