"""P4Runtime controller: topology model, address plan, table entries, install and `mrcctl`."""

import os

# gRPC's core logs every failed TLS handshake on stderr (it retries several times a
# second); a client reports a refused switch as one line of its own instead. Set
# before grpc is first imported, which is when the core reads it; a user's own
# GRPC_VERBOSITY wins.
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
