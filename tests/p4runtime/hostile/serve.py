"""The server under attack, in a process of its own (its memory and CPU are then its
own to measure): ``python -m tests.p4runtime.hostile.serve [LIMITS_JSON]``.

A device (id 1, CPU port 255) behind a P4RuntimeServer on an ephemeral loopback port,
on the transport ``P4TARGET_GRPC_TRANSPORT`` names, over mutual TLS when
``HOSTILE_TLS_DIR`` names a directory ``mrcctl certs`` wrote (``server-s1.*``). It prints one line, ``PORT
TRANSPORT PID``, then serves until its standard input closes. LIMITS_JSON: keyword
arguments of ``ServerLimits``, and ``max_workers`` of the server. Log records go to
standard error.
"""

from __future__ import annotations

import json
import logging
import os
import sys


def main() -> int:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from p4target.device import Device
    from p4target.p4runtime.server import P4RuntimeServer

    kwargs = {}
    if len(sys.argv) > 1:
        from p4target.p4runtime.limits import ServerLimits

        given = json.loads(sys.argv[1])
        if "max_workers" in given:
            kwargs["max_workers"] = given.pop("max_workers")
        kwargs["limits"] = ServerLimits(**given)
    tls_dir = os.environ.get("HOSTILE_TLS_DIR")
    if tls_dir:
        from pathlib import Path

        from p4target.p4runtime.tls import load

        d = Path(tls_dir)
        kwargs["tls"] = load(d / "server-s1.pem", d / "server-s1.key", d / "ca.pem")
    server = P4RuntimeServer(Device(device_id=1, cpu_port=255), "127.0.0.1:0", **kwargs)
    server.start()
    print(server.bound_port, server.transport, os.getpid(), flush=True)
    sys.stdin.read()
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
