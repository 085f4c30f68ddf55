"""CPU time the P4Runtime server's HTTP/2 loop thread spends after answering one call.

After a round that read a request, the loop polls for ``spin_us`` microseconds
(yielding the CPU between polls) before it blocks in epoll_wait
(p4target/accel/h2_loop.pyx, ``_spin_wait``): a client that writes again within
that time is answered without a wake-up. This prints, for spin 0, the default and
200 ms, the loop thread's CPU seconds in the 0.5 s after one unary call (its thread
CPU clock), so the cost of the polling can be read off. The test suite checks only
that polling costs many times more than blocking (tests/p4runtime/test_transports.py).
Prints only: ``.venv/bin/python bench/h2_spin_cpu.py [ROUNDS]``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import grpc

from p4target.accel.h2_server import DEFAULT_SPIN_US, H2Server

METHOD = "/bench.Spin/Echo"


def _echo(request: bytes, context: object) -> bytes:
    return request


class _Handlers(grpc.GenericRpcHandler):
    def service(self, details: grpc.HandlerCallDetails):  # grpc's own type
        if details.method == METHOD:
            return grpc.unary_unary_rpc_method_handler(_echo)
        return None


def loop_cpu_after_one_call(spin_us: int) -> float:
    server = H2Server(2, inline=(METHOD,), spin_us=spin_us)
    server.add_generic_rpc_handlers((_Handlers(),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        clock = time.pthread_getcpuclockid(server._thread.ident)
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            call = channel.unary_unary(METHOD, request_serializer=bytes, response_deserializer=bytes)
            call(b"warm")
            time.sleep(0.5)
            before = time.clock_gettime(clock)
            call(b"x")
            time.sleep(0.5)
            return time.clock_gettime(clock) - before
    finally:
        server.stop(0.5).wait(10)


def main() -> int:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    print(f"HTTP/2 loop thread CPU in the 0.5 s after one call ({rounds} rounds: min .. max)")
    for spin in (0, DEFAULT_SPIN_US, 200_000):
        got = [loop_cpu_after_one_call(spin) for _ in range(rounds)]
        print(f"  spin {spin:>7} us: {min(got) * 1e3:8.3f} .. {max(got) * 1e3:8.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
