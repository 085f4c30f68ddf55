"""Constructs of p4c's samples (testdata/p4_16_samples) the target runs, on packets.

- ``typedef register<cell_t> cells_t; cells_t(4) cells;`` (issue2735-bmv2.p4): a
  register of 16-bit cells, 4 of them;
- a ``selector`` key in a table with no ``implementation`` (issue1560-bmv2.p4): p4c
  leaves it out (the BMv2 JSON and the P4Info list only the exact key), so the table
  matches on ``hdr.h.r`` alone;
- ``(int)`` of a run-time value (parser-unroll-test1.p4): +, - and * on it are exact,
  and the cast back to bit<W>/int<W> keeps the low W bits (two's complement for int<W>).

Expected values, by hand: v = 200 -> 200 + 300 = 500 = 0x1f4 -> 0xf4 = 244;
s = -50 -> -151 -> -151 + 256 = 105; s = -128 -> -385 -> -385 + 512 = 127;
v = 10 -> 310 - 256 = 54; s = 100 -> 299 - 256 = 43.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from p4target import Switch
from p4target.compiler import compile_file
from p4target.errors import P4Error
from p4target.runtime.entries import Exact

PROG = Path(__file__).parent / "p4" / "sample_features.p4"


def _s8(x: int) -> int:
    return x & 0xFF


def _refusal(tmp_path: Path, prog: Path, old: str, new: str, needle: str) -> tuple[str, str]:
    """The error of ``prog`` with ``old`` replaced by ``new``, and the ``file:line:``
    where it must be: the line of the variant holding ``needle``."""
    text = prog.read_text()
    assert old in text
    text = text.replace(old, new)
    bad = tmp_path / "bad.p4"
    bad.write_text(text)
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if needle in ln)
    with pytest.raises(P4Error) as ei:
        compile_file(bad)
    return str(ei.value), f"{bad}:{line}:"


def test_the_model_has_the_exact_key_only_and_a_register_of_16_bit_cells() -> None:
    model = compile_file(PROG).model
    (pick,) = model.tables
    assert [(k.name, k.bitwidth, k.match_kind) for k in pick.keys] == [("hdr.h.r", 8, "exact")]
    (cells,) = model.externs
    assert (cells.kind, cells.name, cells.size, cells.bitwidth) == ("register", "Ing.cells", 4, 16)


def test_int_arithmetic_wraps_to_the_width_and_the_register_accumulates() -> None:
    sw = Switch.load(PROG)
    assert sw.inject(0, bytes([200, _s8(-50), 5])) == [(1, bytes([244, 105, 0]))]
    assert sw.inject(0, bytes([10, _s8(-128), 7])) == [(1, bytes([54, 127, 5]))]
    assert sw.inject(0, bytes([10, 100, 0])) == [(1, bytes([54, 43, 12]))]
    assert sw.register_read("Ing.cells", 2) == 12
    assert sw.register_read("Ing.cells", 1) == 0


def test_the_table_matches_on_its_exact_key() -> None:
    sw = Switch.load(PROG)
    sw.table_add("Ing.pick", {"hdr.h.r": Exact(5)}, "Ing.to", {"port": 6})
    assert sw.inject(0, bytes([0, 0, 5])) == [(6, bytes([44, _s8(-1), 0]))]
    assert sw.inject(0, bytes([0, 0, 4])) == [(1, bytes([44, _s8(-1), 5]))]


@pytest.mark.parametrize(("old", "new", "why"), [
    ("(int)hdr.h.s * 3 - 1", "(int)hdr.h.s / 3", "'/' on unsized integers needs constants"),
    ("(bit<8>)((int)hdr.h.v + 300)", "(int)hdr.h.v + 300",
     "an unsized integer computed at run time has no width here; cast it to bit<W> or int<W>"),
    ("(bit<8>)((int)hdr.h.v + 300)", "hdr.h.v + ((int)hdr.h.v + 300)",
     "an unsized integer computed at run time has no width here"),
])
def test_int_of_a_run_time_value_is_refused_where_it_needs_a_width(
        tmp_path: Path, old: str, new: str, why: str) -> None:
    msg, where = _refusal(tmp_path, PROG, old, new, new)
    assert msg.startswith(where) and why in msg


TUPLES = Path(__file__).parent / "p4" / "tuple_fields.p4"


def test_a_header_in_a_tuple_field_changes_in_place_and_a_copied_tuple_is_its_own() -> None:
    # meta.s.n[0][1].b = v (5); t = meta.s.n; t[0][1].b = 9: w = 5 (the field), x = 9 (the copy)
    sw = Switch.load(TUPLES)
    assert sw.inject(0, bytes([5, 0, 0])) == [(2, bytes([5, 5, 9]))]
    assert sw.inject(0, bytes([7, 1, 1])) == [(2, bytes([7, 7, 9]))]


@pytest.mark.parametrize("stmt", ["meta.s.n[1] = 3;", "t[0] = meta.s.n[0];"])
def test_assigning_a_tuple_element_itself_is_refused(tmp_path: Path, stmt: str) -> None:
    msg, where = _refusal(tmp_path, TUPLES, "t[0][1].b = 9;", f"t[0][1].b = 9; {stmt}", stmt)
    assert msg.startswith(where) and "assigning to a tuple element" in msg


CONTROLLER = Path(__file__).parent / "p4" / "controller_struct.p4"


def test_a_struct_field_of_a_controller_header_is_flattened_as_p4c_names_it() -> None:
    from finsy.proto.p4.v1 import p4runtime_pb2

    from p4target.p4info import build_p4info
    from p4target.p4runtime.packet_io import build_packet_out_frame
    from p4target.p4runtime.schema import build_schema

    sw = Switch.load(CONTROLLER, cpu_port=64)
    (meta,) = build_p4info(sw.model).controller_packet_metadata
    assert [(m.id, m.name, m.bitwidth) for m in meta.metadata] == [(1, "dest.port", 16), (2, "dest.tag", 8),
                                                                  (3, "pad", 8)]
    eth = bytes(range(12)) + b"\x08\x00"
    msg = p4runtime_pb2.PacketOut(payload=eth + b"data")
    for mid, value in ((1, b"\x03"), (2, b"\xab"), (3, b"\xcd")):
        msg.metadata.add(metadata_id=mid, value=value)
    frame = build_packet_out_frame(build_schema(sw.model).packet_out, msg)
    assert frame[:4] == bytes([0x00, 0x03, 0xAB, 0xCD])
    # to port 3 (dest.port), the EtherType made of dest.tag and pad, the packet_out header gone
    assert sw.inject(64, frame) == [(3, bytes(range(12)) + b"\xab\xcd" + b"data")]


VARBITS = Path(__file__).parent / "p4" / "varbit_fields.p4"


@pytest.mark.parametrize(("frame", "out"), [
    # a = 0x11 (8 bits), b = 0x2233 (16 bits): swapped through the variables, then
    # cp = tag 0xee + a's first value (through meta.keep); the payload 0x99 last
    (bytes([1, 2, 0x11, 0x22, 0x33, 0x99]), bytes([1, 2, 0x22, 0x33, 0x11, 0xEE, 0x11, 0x99])),
    # a has no bits, b = 0x44: a takes 0x44, b none, cp is its tag alone
    (bytes([0, 1, 0x44, 0x99]), bytes([0, 1, 0x44, 0xEE, 0x99])),
    (bytes([3, 0, 1, 2, 3, 0x99]), bytes([3, 0, 1, 2, 3, 0xEE, 1, 2, 3, 0x99])),
])
def test_a_varbit_value_keeps_its_width_through_fields_and_variables(frame: bytes, out: bytes) -> None:
    assert Switch.load(VARBITS).inject(0, frame) == [(1, out)]


def test_a_varbit_value_from_a_parameter_is_refused(tmp_path: Path) -> None:
    old = "    varbit<32> held;\n"
    msg, where = _refusal(tmp_path, VARBITS, old, old + "    action put(in varbit<32> v) { hdr.cp.data = v; }\n",
                          "hdr.cp.data = v;")
    assert msg.startswith(where)
    assert "a varbit value that is not a field or a variable is not supported by the embedded target" in msg


GENERIC = Path(__file__).parent / "p4" / "generic_types.p4"


def test_generic_headers_and_structs_take_the_widths_of_their_arguments() -> None:
    # small = pair of bit<8> (1, 2): swapped to (2, 1); big = pair of bit<16>:
    # second = first (0x0100) + small.first (2) = 0x0102; the payload 0x99 after 6 bytes
    sw = Switch.load(GENERIC)
    assert sw.inject(0, bytes([1, 2, 0x01, 0x00, 0x00, 0x05, 0x99])) == [
        (1, bytes([2, 1, 0x01, 0x00, 0x01, 0x02, 0x99]))]


def test_a_generic_type_with_the_wrong_number_of_arguments_is_refused(tmp_path: Path) -> None:
    msg, where = _refusal(tmp_path, GENERIC, "pair_t<A> small;", "pair_t<A, B> small;", "pair_t<A, B> small;")
    assert msg.startswith(where) and "header pair_t takes 1 type argument(s), not 2" in msg


LOOKAHEAD = Path(__file__).parent / "p4" / "lookahead_stack.p4"


@pytest.mark.parametrize(("frame", "out"), [
    # items (5, 1), after 9: state one extracts items[0] = 5; ingress adds valid (1): 6
    (bytes([5, 1, 9, 0xAA]), bytes([6, 1, 9, 0xAA])),
    # items (5, 2), after 7: state seven extracts both items and tail (7); tail.x = first (5)
    (bytes([5, 2, 7, 0xAA]), bytes([6, 2, 5, 0xAA])),
    # items (5, 2), after 3: nothing extracted, the frame leaves as it came
    (bytes([5, 2, 3, 0xAA]), bytes([5, 2, 3, 0xAA])),
    # 2 bytes: lookahead of 3 bytes fails (PacketTooShort); nothing extracted
    (bytes([5, 1]), bytes([5, 1])),
])
def test_lookahead_of_a_struct_with_a_stack_fills_every_element(frame: bytes, out: bytes) -> None:
    assert Switch.load(LOOKAHEAD).inject(0, frame) == [(1, out)]


DIGESTS = Path(__file__).parent / "p4" / "list_digest.p4"
LEARN = bytes.fromhex("000000000005" "0200000000aa" "88b5")  # dst ..05, src 02..aa, EtherType 0x88b5


def test_a_digest_of_a_list_is_a_tuple_named_as_p4c_names_it() -> None:
    from p4target.p4info import build_p4info

    sw = Switch.load(DIGESTS)
    ipv4 = LEARN[:12] + b"\x08\x00"
    assert sw.inject(0, LEARN) == [(1, LEARN)]
    assert sw.inject(0, ipv4) == [(1, ipv4)]
    assert sw.digests() == [("digest_0", (0x0200000000AA, 0x88B5)), ("digest_1", (5,))]
    digests = build_p4info(sw.model).digests
    assert [d.preamble.name for d in digests] == ["digest_0", "digest_1"]
    assert [[m.bitstring.bit.bitwidth for m in d.type_spec.tuple.members] for d in digests] == [[48, 16], [8]]


def test_a_digest_of_a_list_reaches_the_controller_as_a_tuple() -> None:
    from finsy.proto.p4.v1 import p4runtime_pb2

    from p4target.device import Device
    from p4target.device_config import device_config_from_file
    from p4target.p4info import build_p4info
    from p4target.p4runtime.server import P4RuntimeServer
    from tests.p4runtime.p4rt_client import RawClient, enc, update

    device = Device(device_id=1, cpu_port=255)
    device.output_sink = lambda port, frame: None
    server = P4RuntimeServer(device, "127.0.0.1:0")
    server.start()
    try:
        client = RawClient(server.bound_port, device_id=1)
        try:
            client.arbitrate(10)
            info = build_p4info(compile_file(DIGESTS).model)
            client.set_pipeline(info, device_config_from_file(DIGESTS))
            did = next(d.preamble.id for d in info.digests if d.preamble.name == "digest_0")
            client.write(update("d", digest_entry=p4runtime_pb2.DigestEntry(digest_id=did)))
            device.receive(0, LEARN)
            lst = client.next("digest")
            assert lst.digest_id == did
            assert [m.bitstring for m in lst.data[0].tuple.members] == [enc(0x0200000000AA), enc(0x88B5)]
        finally:
            client.close()
    finally:
        server.stop()
