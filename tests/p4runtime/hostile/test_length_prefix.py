"""gRPC length prefixes that do not match the message: short, with the top bit set
(a length C would read as negative), 0xFFFFFFFF. Each call gets its own error; the
server keeps serving everyone else."""

from __future__ import annotations

from tests.p4runtime.hostile.harness import CAPABILITIES, Raw, grpc_message, request_headers

INTERNAL, RESOURCE_EXHAUSTED = "13", "8"


def _one_call(target, data: bytes) -> str | None:
    raw = Raw(target)
    try:
        sid = raw.h2.get_next_available_stream_id()
        raw.h2.send_headers(sid, request_headers())
        raw.h2.send_data(sid, data, end_stream=True)
        raw.flush()
        return raw.status(sid)
    finally:
        raw.close()


def test_top_bit_length_prefix(bar) -> None:
    """00 80 00 00 00: 2 GiB declared. Once a 100 % CPU spin of the loop thread."""
    assert bar(_one_call, b"\x00\x80\x00\x00\x00") == RESOURCE_EXHAUSTED


def test_all_ones_length_prefix(bar) -> None:
    assert bar(_one_call, grpc_message(CAPABILITIES, length=0xFFFFFFFF)) == RESOURCE_EXHAUSTED


def test_short_length_prefix(bar) -> None:
    """The prefix declares more than the stream carries: the stream ends inside a message."""
    assert bar(_one_call, grpc_message(CAPABILITIES, length=100)) == INTERNAL


def test_long_length_prefix(bar) -> None:
    """The prefix declares less: the rest is a second, truncated message of a unary call."""
    assert bar(_one_call, grpc_message(b"\x00" * 40, length=10)) == INTERNAL
