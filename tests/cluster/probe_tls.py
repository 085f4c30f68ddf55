"""Ask a running network's switch for P4Runtime Capabilities without and with the
client certificate of the state file's ``tls_dir``; prints how each went."""

from __future__ import annotations

import json
import sys

from topologies.p4switch import grpc_answers


def main(state: str, switch: str) -> None:
    target = json.loads(open(state).read())["switches"][switch]
    plain = grpc_answers(target["address"], 3.0)
    tls = grpc_answers(target["address"], 3.0, tls_dir=target["tls_dir"])
    print(f"plaintext: {'answers' if plain else 'refused'} tls: {'answers' if tls else 'refused'}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
