"""The hostile-client suite: each attack of ``attacks`` against the server on loopback
and over mutual TLS (an attacker with a valid client certificate), held to the bar of
``conftest.Bar`` (alive, the healthy client answered within 2 s during and after,
RSS, CPU back to idle, no traceback), and what the server answered the attacker
checked where the protocol says what it must be.

``HOSTILE_SCALE=N`` multiplies the attacks' counts; ``HOSTILE_MUTATIONS`` is the
number of mutated calls (2,000). ``bench/p4runtime_hostile.py`` prints the figures.
"""

from __future__ import annotations

import os

from finsy.proto.p4.v1 import p4runtime_pb2

from tests.p4runtime.hostile import attacks
from tests.p4runtime.hostile.harness import SCALE

OK, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, UNIMPLEMENTED, INTERNAL = "0", "4", "8", "12", "13"
HANDLER_THREADS = 32             # P4RuntimeServer's default max_workers
BLOCKING_SEND_BYTES = 4 << 20    # queued answer bytes past which a blocking send waits for the client
WINDOW_BYTES = 65535             # HTTP/2's initial connection window (SETTINGS cannot change it)


def test_garbage_preface(bar) -> None:
    assert bar(attacks.garbage_preface, SCALE) == 20 * SCALE


def test_truncated_preface(bar) -> None:
    bar(attacks.truncated_preface, SCALE)


def test_truncated_frame(bar) -> None:
    bar(attacks.truncated_frame, SCALE)


def test_oversized_frame(bar) -> None:
    assert all(bar(attacks.oversized_frame, SCALE))


def test_bad_frames_after_preface(bar) -> None:
    ended = bar(attacks.bad_frames_after_preface, SCALE)
    assert [name for name, yes in ended.items() if not yes] == []


def test_unknown_frame_type_is_ignored(bar) -> None:
    assert bar(attacks.unknown_frame_type, SCALE) == OK


def test_settings_flood(bar) -> None:
    ended = bar(attacks.settings_flood, SCALE)
    assert ended  # nghttp2 bounds the acknowledgements it queues


def test_ping_flood(bar) -> None:
    ended = bar(attacks.ping_flood, SCALE)
    assert ended


def test_window_update_zero(bar) -> None:
    conn_ended, stream = bar(attacks.window_update_zero, SCALE)
    assert conn_ended
    assert stream in (f"RST {attacks.PROTOCOL_ERROR}", "connection ended")


def test_window_update_overflow(bar) -> None:
    conn_ended, stream = bar(attacks.window_update_overflow, SCALE)
    assert conn_ended
    assert stream == f"RST {attacks.FLOW_CONTROL_ERROR}"


def test_slowloris(bar) -> None:
    bar(attacks.slowloris, SCALE)


def test_500_held_connections(bar) -> None:
    assert bar(attacks.held_connections, SCALE) == 500 * SCALE


def test_header_block_of_1mb(bar) -> None:
    assert bar(attacks.header_block_1mb, SCALE) in (RESOURCE_EXHAUSTED, "connection ended")


def test_continuation_flood(bar) -> None:
    assert bar(attacks.continuation_flood, SCALE)


def test_hpack_bomb(bar) -> None:
    """Once 0.6-1.1 s of loop time and 560 MB per call."""
    statuses = bar(attacks.hpack_bomb, SCALE)
    assert all(s == RESOURCE_EXHAUSTED for s in statuses), statuses


def test_bad_pseudo_headers(bar) -> None:
    """Each malformed request is refused: reset (PROTOCOL_ERROR), its connection
    ended, or an error status; none is answered OK."""
    got = bar(attacks.bad_pseudo_headers, SCALE)
    assert [name for name, status in got.items() if status in (OK, None)] == [], got
    # nghttp2 resets each malformed request; a well-formed one for no method is UNIMPLEMENTED
    rst = f"RST {attacks.PROTOCOL_ERROR}"
    assert got == {**{name: rst for name in attacks.PSEUDO_HEADER_CASES},
                   "path without a method": UNIMPLEMENTED, "unknown method": UNIMPLEMENTED}


def test_non_post_method(bar) -> None:
    got = bar(attacks.non_post, SCALE)
    assert got == {"GET": UNIMPLEMENTED, "PUT": UNIMPLEMENTED, "HEAD": UNIMPLEMENTED}


def test_non_grpc_content_type(bar) -> None:
    got = bar(attacks.non_grpc_content_type, SCALE)
    assert all(s == UNIMPLEMENTED for s in got.values()), got


def test_stream_ends_inside_a_message(bar) -> None:
    assert bar(attacks.stream_ends_inside_a_message, SCALE) == INTERNAL


def test_compressed_flag_without_encoding(bar) -> None:
    assert bar(attacks.compressed_without_encoding, SCALE) == INTERNAL


def test_compressed_flag_with_unknown_encoding(bar) -> None:
    assert bar(attacks.compressed_unknown_encoding, SCALE) == UNIMPLEMENTED


def test_gzip_bomb(bar) -> None:
    """190 KB that inflate to 192 MB: once inflated whole (a 256 MB limit)."""
    assert bar(attacks.gzip_bomb, SCALE) == RESOURCE_EXHAUSTED


def test_rapid_reset(bar) -> None:
    """Once 4.3 s without a correct answer: the Reads handed to the pool kept running."""
    ended = bar(attacks.rapid_reset, SCALE)
    assert ended == 5 * SCALE  # nghttp2's reset rate limit ends every such connection


def test_zero_window_with_large_answers(bar) -> None:
    """One more unread answer than the server has handler threads, each larger than
    what a server that blocks its handler in ``send`` lets a stream queue (4 MiB) plus
    a flow-control window: each call must give its thread back, or the healthy
    client's GetForwardingPipelineConfig, Read and arbitration wait for the attacker."""
    one = p4runtime_pb2.ReadRequest.FromString(attacks.read_all())
    per_copy = sum(r.ByteSize() for r in bar.s.healthy.stub.Read(one, timeout=10))
    copies = (BLOCKING_SEND_BYTES + WINDOW_BYTES) // per_copy + 2
    streams = HANDLER_THREADS + 1
    answered = bar(attacks.zero_window_large_answers, SCALE, streams, copies)
    assert answered == streams * SCALE, f"{answered} of {streams * SCALE} Reads were begun"


def test_grpc_timeout_deadline(bar) -> None:
    assert bar(attacks.deadline, SCALE) in (DEADLINE_EXCEEDED, f"RST {attacks.CANCEL}")


def test_far_deadlines(bar) -> None:
    """Only the zero deadline ends its call while the connection is open."""
    got = bar(attacks.far_deadlines, SCALE)
    assert got[:4] == [None] * 4
    assert got[4] == DEADLINE_EXCEEDED


def test_random_mutation_of_recorded_calls(bar) -> None:
    bar(attacks.random_mutation, SCALE, int(os.environ.get("HOSTILE_MUTATIONS", "2000")))
