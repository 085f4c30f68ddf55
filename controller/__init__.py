"""The P4Runtime controller and ``mrcctl``: where the switches are, the sessions, the
codec from the fabric model's entries (fabric/) to P4Runtime, the diff and reconcile
that install them, counters, denials, a running network's state file and cable cuts,
and the ``mrcctl`` command lines (cli.py, ops_cli.py)."""

import os

# gRPC's core logs every failed TLS handshake on stderr (it retries several times a
# second); a client reports a refused switch as one line of its own instead. Set
# before grpc is first imported, which is when the core reads it; a user's own
# GRPC_VERBOSITY wins.
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
