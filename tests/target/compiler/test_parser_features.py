"""Parser constructs on real packets: stacks, varbit, lookahead, advance, select forms,
verify, header unions, and v1model parser errors reaching ingress."""

from __future__ import annotations

import pytest
from scapy.fields import BitField, ByteField
from scapy.packet import Packet, Raw

from p4target import Switch
from p4target.compiler import compile_file


class Tag(Packet):
    name = "tag_t"
    fields_desc = [ByteField("kind", 0), ByteField("count", 0)]


class Item(Packet):
    name = "item_t"
    fields_desc = [BitField("v", 0, 7), BitField("last", 0, 1)]


class Report(Packet):
    name = "report_t"
    fields_desc = [ByteField(n, 0) for n in ("err", "items", "last_index", "first_v", "last_v",
                                             "which_ip", "peeked", "skipped", "opt_len", "size")]


ERR_NONE, ERR_SHORT, ERR_STACK, ERR_VERSION, ERR_COUNT, ERR_VARBIT = 0, 1, 2, 3, 4, 5


@pytest.fixture(scope="module")
def sw():
    from tests.target.compiler.conftest import CONSTRUCTS
    return Switch.load(CONSTRUCTS / "parser_features.p4")


def run(sw, *layers: Packet | bytes) -> tuple[Report, bytes]:
    frame = b"".join(bytes(x) for x in layers)
    out = sw.inject(0, frame)
    assert len(out) == 1 and out[0][0] == 1
    data = out[0][1]
    return Report(data[:10]), data[10:]


def items(*vals: tuple[int, int]) -> bytes:
    return b"".join(bytes(Item(v=v, last=last)) for v, last in vals)


def test_program_errors_are_numbered_after_the_core_errors() -> None:
    from tests.target.compiler.conftest import CONSTRUCTS
    errs = compile_file(CONSTRUCTS / "parser_features.p4").errors
    assert errs == {"NoError": 0, "PacketTooShort": 1, "NoMatch": 2, "StackOutOfBounds": 3,
                    "HeaderTooShort": 4, "ParserTimeout": 5, "ParserInvalidArgument": 6,
                    "BadVersion": 7, "BadCount": 8}


def test_stack_extracts_until_the_last_item(sw) -> None:
    body = items((1, 0), (2, 0), (3, 1))
    r, rest = run(sw, Tag(kind=1), body, b"PP")
    assert (r.err, r.items, r.last_index, r.first_v, r.last_v, r.size) == (ERR_NONE, 3, 2, 1, 3, 4)
    assert rest == bytes(Tag(kind=1)) + body + b"PP"


def test_stack_overflow_is_stack_out_of_bounds_and_the_rest_is_payload(sw) -> None:
    body = items((1, 0), (2, 0), (3, 0), (4, 0))
    r, rest = run(sw, Tag(kind=1), body, items((5, 0)), b"Q")
    assert (r.err, r.items, r.last_index, r.last_v) == (ERR_STACK, 4, 3, 4)
    assert rest == bytes(Tag(kind=1)) + body + items((5, 0)) + b"Q"


def test_pop_front_and_push_front(sw) -> None:
    r, rest = run(sw, Tag(kind=1, count=0xF0), items((1, 0), (2, 1)))
    assert (r.items, r.first_v, r.last_v) == (2, 1, 2)
    assert rest == bytes(Tag(kind=1, count=0xF0)) + items((2, 1))
    r, rest = run(sw, Tag(kind=1, count=0xF1), items((1, 0), (2, 1)))
    assert rest == bytes(Tag(kind=1, count=0xF1)) + items((0x55, 0), (1, 0), (2, 1))


def test_varbit_header_sized_by_lookahead_round_trips(sw) -> None:
    opt = bytes([3]) + b"abc" + bytes([0x99])
    r, rest = run(sw, Tag(kind=2, count=5), opt, b"zz")
    assert (r.err, r.opt_len) == (ERR_NONE, 3)
    assert rest == bytes(Tag(kind=2, count=5)) + opt + b"zz"


def test_varbit_longer_than_its_maximum_is_header_too_short(sw) -> None:
    opt = bytes([9]) + b"x" * 10
    r, rest = run(sw, Tag(kind=2, count=5), opt)
    assert (r.err, r.opt_len) == (ERR_VARBIT, 0)
    assert rest == bytes(Tag(kind=2, count=5)) + opt


def test_select_mask_miss_falls_to_default(sw) -> None:
    r, rest = run(sw, Tag(kind=2, count=0x80), b"\x03abc\x99")
    assert (r.err, r.opt_len) == (ERR_NONE, 0)
    assert rest == bytes(Tag(kind=2, count=0x80)) + b"\x03abc\x99"


def test_lookahead_selects_the_union_member(sw) -> None:
    r, rest = run(sw, Tag(kind=3, count=0), b"\x45\x40\x01\x02")
    assert (r.err, r.which_ip, r.peeked) == (ERR_NONE, 4, 0x40)
    assert rest == bytes(Tag(kind=3)) + b"\x45\x40\x01\x02"
    r, rest = run(sw, Tag(kind=3, count=1), b"\x60\x20\xab\xcd")
    assert (r.which_ip, r.peeked) == (6, 0x20)
    assert rest == bytes(Tag(kind=3, count=1)) + b"\x60\x20\xab\xcd"


def test_setting_one_union_member_valid_invalidates_the_other(sw) -> None:
    r, rest = run(sw, Tag(kind=3, count=9), b"\x45\x40\x00\x00")
    assert r.which_ip == 4
    assert rest == bytes(Tag(kind=3, count=9)) + b"\x60\x40\xbe\xef" + b"\x00\x00"


def test_range_miss_and_verify_errors(sw) -> None:
    r, rest = run(sw, Tag(kind=3, count=10), b"\x45\x40")
    assert (r.err, r.which_ip) == (ERR_NONE, 0)
    r, _ = run(sw, Tag(kind=3, count=2), b"\x75\x00\x00\x00")
    assert r.err == ERR_VERSION
    r, _ = run(sw, Tag(kind=5, count=1))
    assert r.err == ERR_COUNT
    r, _ = run(sw, Tag(kind=5, count=0))
    assert r.err == ERR_NONE


def test_advance_skips_bytes_and_parser_locals_persist_across_states(sw) -> None:
    r, rest = run(sw, Tag(kind=4, count=7), b"\xde\xad", Tag(kind=0x11, count=0x22), Raw(b"p"))
    assert (r.err, r.skipped) == (ERR_NONE, 2)
    assert rest == bytes(Tag(kind=4, count=7)) + bytes(Tag(kind=0x11, count=0x22)) + b"p"


def test_truncated_frames_are_packet_too_short(sw) -> None:
    r, rest = run(sw, b"\x01")
    assert r.err == ERR_SHORT and rest == b"\x01"
    r, rest = run(sw, Tag(kind=4), b"\xde")
    assert r.err == ERR_SHORT and rest == bytes(Tag(kind=4)) + b"\xde"
    r, rest = run(sw, Tag(kind=3, count=0), b"\x45")   # lookahead past the end
    assert r.err == ERR_SHORT and rest == bytes(Tag(kind=3)) + b"\x45"


def test_stack_element_assignment_at_a_run_time_index(sw) -> None:
    _, rest = run(sw, Tag(kind=1, count=0xF2), items((1, 0), (2, 1)))
    assert rest == bytes(Tag(kind=1, count=0xF2)) + items((1, 0), (1, 0))
    _, rest = run(sw, Tag(kind=1, count=0xF3), items((1, 0), (2, 1)))
    assert rest == bytes(Tag(kind=1, count=0xF3)) + items((1, 0), (2, 1))
