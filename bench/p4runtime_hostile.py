"""The hostile-client attacks of tests/p4runtime/hostile, measured on both transports.

For each attack class: the server's RSS before and after (and its peak during), the
healthy client's worst latency during the attack (each of its calls has a 2 s
deadline: a call that does not make it counts as a failure) and how many of its
calls failed. The suite asserts the bar at a small size; this prints the figures,
and with ``--full`` runs the attacks at the sizes first reported against the server
(40 unread Reads of about 5 MB each, 5,000 mutations, 16 HPACK-bomb calls). Prints
only; never asserts.

    .venv/bin/python bench/p4runtime_hostile.py [--full] [--transport h2|tls|grpc|grpc-tls] [--only NAME ...]

``tls`` and ``grpc-tls`` are the same servers over mutual TLS (the attacker holding a
valid client certificate), with the attacks on the TLS layer of ``tls_attacks`` too.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from finsy.proto.p4.v1 import p4runtime_pb2

from tests.p4runtime.hostile import attacks, tls_attacks
from tests.p4runtime.hostile.harness import TRANSPORTS, Served, Watch, serve

RT_ALL = Path(__file__).resolve().parents[1] / "tests" / "p4runtime" / "p4" / "rt_all.p4"


def answer_bytes_per_copy(s: Served) -> int:
    """Bytes of one wildcard Read's answer (what ``attacks.read_all`` asks per copy)."""
    req = p4runtime_pb2.ReadRequest.FromString(attacks.read_all())
    return sum(r.ByteSize() for r in s.healthy.stub.Read(req, timeout=10))


def plan(full: bool, per_copy: int, tls: bool = False) -> list[tuple[str, object, tuple]]:
    """(name, attack, extra arguments) in the suite's order; ``tls``: with the attacks
    on the TLS layer."""
    zero_copies = max(1, (5 << 20) // per_copy) if full else 15
    on_tls = [("handshake flood, no valid certificate", tls_attacks.handshake_flood, ()),
              ("slow handshakes", tls_attacks.slow_handshakes, ()),
              ("stalled TLS records", tls_attacks.stalled_records, ())] if tls else []
    return on_tls + [
        ("garbage preface", attacks.garbage_preface, ()),
        ("truncated preface", attacks.truncated_preface, ()),
        ("truncated frame", attacks.truncated_frame, ()),
        ("oversized frame", attacks.oversized_frame, ()),
        ("bad frames after preface", attacks.bad_frames_after_preface, ()),
        ("SETTINGS flood", attacks.settings_flood, ()),
        ("PING flood", attacks.ping_flood, ()),
        ("WINDOW_UPDATE 0", attacks.window_update_zero, ()),
        ("WINDOW_UPDATE overflow", attacks.window_update_overflow, ()),
        ("slowloris", attacks.slowloris, ()),
        ("500 held connections", attacks.held_connections, ()),
        ("1 MB header block", attacks.header_block_1mb, ()),
        ("CONTINUATION flood", attacks.continuation_flood, ()),
        ("HPACK bomb", attacks.hpack_bomb, (4 if full else 1,)),
        ("bad pseudo-headers", attacks.bad_pseudo_headers, ()),
        ("non-POST method", attacks.non_post, ()),
        ("non-gRPC content type", attacks.non_grpc_content_type, ()),
        ("stream ends in a message", attacks.stream_ends_inside_a_message, ()),
        ("compressed, no encoding", attacks.compressed_without_encoding, ()),
        ("compressed, unknown encoding", attacks.compressed_unknown_encoding, ()),
        ("gzip bomb (192 MB)", attacks.gzip_bomb, ()),
        ("rapid reset (5 x 2,000)", attacks.rapid_reset, ()),
        (f"zero window, 40 x {zero_copies * per_copy / 1e6:.1f} MB", attacks.zero_window_large_answers,
         (1, 40, zero_copies)),
        ("grpc-timeout", attacks.deadline, ()),
        ("random mutation", attacks.random_mutation, (1, 5000 if full else 2000)),
    ]


def measure(s: Served, attack, args: tuple) -> tuple[int, int, int, float, int]:
    """RSS MB before, after and at peak; the healthy client's worst latency in ms and
    its failed calls, during the attack."""
    target = s.target
    rss0 = target.rss_kb()
    target.reset_peak()
    s.healthy.latencies.clear()
    with Watch(s.healthy) as watch:
        attack(target, *args)
        time.sleep(0.2)
    worst = max(s.healthy.latencies, default=float("nan")) * 1000
    if not target.alive():
        return rss0 // 1024, -1, -1, worst, len(watch.failures)
    time.sleep(0.5)
    return rss0 // 1024, target.rss_kb() // 1024, target.peak_kb() // 1024, worst, len(watch.failures)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--full", action="store_true", help="the attacks at their first-reported sizes")
    parser.add_argument("--transport", choices=tuple(TRANSPORTS), action="append",
                        help="only this transport (repeatable; default h2 and grpc)")
    parser.add_argument("--only", action="append", default=[], metavar="NAME",
                        help="only attacks whose name contains NAME (repeatable)")
    args = parser.parse_args()
    from p4target.device_config import device_config_from_file, load_device_config
    from p4target.p4info import build_p4info

    bundle = device_config_from_file(RT_ALL)
    rt_config = (build_p4info(load_device_config(bundle).model), bundle)
    print("attack                               transport    RSS MB before/after/peak  "
          "healthy worst ms  failed calls")
    for transport in args.transport or ("h2", "grpc"):
        s = serve(transport, rt_config)
        try:
            for name, attack, extra in plan(args.full, answer_bytes_per_copy(s), s.target.tls is not None):
                if args.only and not any(o.lower() in name.lower() for o in args.only):
                    continue
                if not s.target.alive():
                    s = serve(transport, rt_config)
                before, after, peak, worst, failed = measure(s, attack, extra)
                died = "  (server died)" if after < 0 else ""
                print(f"{name:36s} {s.target.name:16s} {before:6d} {after:6d} {peak:6d}"
                      f"       {worst:8.0f}        {failed:4d}{died}", flush=True)
        finally:
            s.healthy.close()
            s.target.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
