"""P4Runtime errors: canonical codes, per-update errors and the batch status.

The spec reports a failed Write as gRPC status UNKNOWN whose ``google.rpc.Status``
(in the ``grpc-status-details-bin`` trailer) carries one ``p4.v1.Error`` per update,
OK for the ones that were applied. Whole-request problems (not primary, no
pipeline, wrong device) are plain gRPC codes. ``P4RTError`` carries a code and a
message for either use; ``EntryError`` kinds from the Switch map onto codes here.
"""

from __future__ import annotations

import grpc
from finsy.proto.google.rpc import code_pb2, status_pb2
from finsy.proto.p4.v1 import p4runtime_pb2

from p4target.errors import EntryError

OK = code_pb2.OK
UNKNOWN = code_pb2.UNKNOWN
INVALID_ARGUMENT = code_pb2.INVALID_ARGUMENT
NOT_FOUND = code_pb2.NOT_FOUND
ALREADY_EXISTS = code_pb2.ALREADY_EXISTS
PERMISSION_DENIED = code_pb2.PERMISSION_DENIED
RESOURCE_EXHAUSTED = code_pb2.RESOURCE_EXHAUSTED
FAILED_PRECONDITION = code_pb2.FAILED_PRECONDITION
OUT_OF_RANGE = code_pb2.OUT_OF_RANGE
UNIMPLEMENTED = code_pb2.UNIMPLEMENTED
ABORTED = code_pb2.ABORTED
INTERNAL = code_pb2.INTERNAL

_GRPC_CODE = {c.value[0]: c for c in grpc.StatusCode}

ENTRY_ERROR_CODE = {
    "invalid": INVALID_ARGUMENT,
    "exists": ALREADY_EXISTS,
    "not_found": NOT_FOUND,
    "full": RESOURCE_EXHAUSTED,
    "const": PERMISSION_DENIED,
    "unimplemented": UNIMPLEMENTED,
    "precondition": FAILED_PRECONDITION,
    "out_of_range": OUT_OF_RANGE,
}


class P4RTError(Exception):
    """A request (or one update of it) refused with a canonical code."""

    def __init__(self, code: int, message: str) -> None:
        self.code = code
        self.message = message
        super().__init__(message)

    @property
    def grpc_code(self) -> grpc.StatusCode:
        return grpc_code(self.code)


def grpc_code(code: int) -> grpc.StatusCode:
    return _GRPC_CODE.get(code, grpc.StatusCode.UNKNOWN)


def from_entry_error(exc: EntryError) -> P4RTError:
    return P4RTError(ENTRY_ERROR_CODE.get(exc.kind, UNKNOWN), exc.message)


def invalid(message: str) -> P4RTError:
    return P4RTError(INVALID_ARGUMENT, message)


# The outcome of one update (or read request): (canonical code, message). A batch
# keeps one per update; the p4.v1.Error messages are built only when one failed.
Outcome = tuple[int, str]
DONE: Outcome = (OK, "")


# Error messages are kept to this many characters in total per failed Write: the
# status travels in a gRPC trailer, and clients refuse trailers beyond their
# metadata limit (16 KiB hard by default). Past the budget, errors keep their code
# and lose their message. Clients sending big batches should raise
# grpc.max_metadata_size: each detail still costs ~40 bytes.
MESSAGE_BUDGET = 6000


def batch_status(outcomes: list[Outcome]) -> status_pb2.Status:
    """google.rpc.Status for a Write (or Read) whose updates did not all succeed."""
    failed = sum(1 for code, _ in outcomes if code != OK)
    first = next((message for code, message in outcomes if code != OK), "")
    status = status_pb2.Status(code=UNKNOWN, message=f"{failed} of {len(outcomes)} updates failed; first: {first}"[:500])
    budget = MESSAGE_BUDGET
    for code, message in outcomes:
        if message:
            if len(message) <= budget:
                budget -= len(message)
            else:
                message = ""
        status.details.add().Pack(p4runtime_pb2.Error(canonical_code=code, message=message))
    return status


def abort_with_status(context: grpc.ServicerContext, status: status_pb2.Status) -> None:
    """End the RPC with ``status`` in the standard rich-status trailer (never returns)."""
    context.set_trailing_metadata((("grpc-status-details-bin", status.SerializeToString()),))
    context.abort(grpc_code(status.code), status.message)
