"""P4 width rules on real packets: arith.p4 computes every operator into a result header."""

from __future__ import annotations

import pytest
from scapy.fields import BitField, ByteField, IntField, ShortField, SignedByteField
from scapy.packet import Packet

from p4target import Switch


class Ops(Packet):
    name = "ops_t"
    fields_desc = [ByteField("a", 0), ByteField("b", 0), SignedByteField("sa", 0),
                   SignedByteField("sb", 0), ShortField("w", 0), IntField("x", 0)]


class Res(Packet):
    name = "res_t"
    fields_desc = [ByteField(n, 0) for n in (
        "add", "sub", "mul", "div", "mod", "sat_add", "sat_sub", "band", "bor", "bxor", "bnot",
        "shl", "shr")] + [ShortField("shl_var", 0)] + [SignedByteField(n, 0) for n in (
            "sadd", "ssat_add", "ssat_sub", "sshr")] + [
        ByteField("neg", 0), ShortField("cat", 0), ByteField("slice", 0), IntField("xw", 0),
        BitField("trunc", 0, 4), BitField("pad", 0, 4), IntField("widen", 0),
        SignedByteField("to_signed", 0), ByteField("to_unsigned", 0), ByteField("flags", 0),
        ByteField("lit", 0), ByteField("color", 0), ByteField("k", 0), ByteField("uninit", 0),
        ByteField("tern", 0), ShortField("word", 0), ByteField("mode", 0), ByteField("outp", 0),
        ByteField("inoutp", 0), ShortField("tup", 0), ByteField("neg_sel", 0)]


@pytest.fixture(scope="module")
def sw():
    from tests.target.compiler.conftest import CONSTRUCTS
    return Switch.load(CONSTRUCTS / "arith.p4")


def run(sw, **ops) -> Res:
    inp = bytes(Ops(**ops))
    out = sw.inject(0, inp)
    assert len(out) == 1 and out[0][0] == 1
    data = out[0][1]
    assert data[:len(inp)] == inp
    assert len(data) == len(inp) + len(Res())
    return Res(data[len(inp):])


def test_unsigned_operators_wrap_and_saturate(sw) -> None:
    r = run(sw, a=200, b=100, sa=-100, sb=-50, w=0x8ABC, x=0x11223344)
    assert (r.add, r.sub, r.mul, r.div, r.mod) == (44, 100, 32, 2, 0)
    assert (r.sat_add, r.sat_sub) == (255, 100)
    assert (r.band, r.bor, r.bxor, r.bnot) == (64, 236, 172, 55)
    assert (r.shl, r.shr, r.shl_var) == (64, 50, 0xABC0)
    assert r.neg == 56


def test_signed_operators_are_twos_complement(sw) -> None:
    r = run(sw, a=200, b=100, sa=-100, sb=-50, w=0x8ABC, x=0x11223344)
    assert r.sadd == 106          # -150 wraps in int<8>
    assert r.ssat_add == -128     # saturates at the minimum
    assert r.ssat_sub == -50
    assert r.sshr == -50          # arithmetic shift
    assert (r.to_signed, r.to_unsigned) == (-56, 156)


def test_slices_concatenation_and_casts(sw) -> None:
    r = run(sw, a=0xC8, b=0x64, w=0x8ABC, x=0x11223344)
    assert r.cat == 0xC864
    assert r.slice == 0xAB
    assert r.xw == 0x1122C844     # x[15:8] = a
    assert (r.trunc, r.pad) == (0xC, 0)
    assert r.widen == 0xC8
    assert r.word == 0x8ABD


def test_comparisons_constants_and_locals(sw) -> None:
    r = run(sw, a=200, b=100, sa=-100, sb=-50, w=0x8ABC)
    assert r.flags == 0b10110     # sa<sb, b!=0, w[15]
    assert r.lit == 44
    assert r.color == 0x80
    assert r.k == 5               # (1 << 10) >> 8 plus the #elif branch
    assert r.uninit == 0
    assert r.tern == 200
    assert r.mode == 7
    r = run(sw, a=1, b=3, sa=5, sb=-3, w=1)
    assert r.flags == 0b01101
    assert (r.sub, r.sat_sub, r.tern, r.color) == (254, 0, 3, 0x81)


def test_division_by_zero_does_not_crash(sw) -> None:
    r = run(sw, a=7, b=0)
    assert (r.div, r.mod) == (0, 0)


def test_out_and_inout_action_parameters_and_tuples(sw) -> None:
    r = run(sw, a=0x12, b=0x34, w=0xABF0)
    assert r.outp == 0xAB                # out parameter copied back
    assert r.inoutp == (1 + 0xF0 + 0x10) & 0xFF
    assert r.tup == 0x1234               # identity hash of the tuple {a, b}


def test_select_range_on_a_signed_field(sw) -> None:
    assert [run(sw, sa=v).neg_sel for v in (-11, -10, -5, -1, 0, 5)] == [0, 1, 1, 1, 0, 0]
