"""Default parameter values (P4_16 6.8.2) and serializable enums converting to their
underlying type (8.3); the expected bytes are worked out in defaults_enums.stf and
direct_apply.stf (controls and parsers with defaults)."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4target.stf import run_stf_program

P4 = Path(__file__).parent / "p4"
PROG = P4 / "defaults_enums.p4"


def test_stf() -> None:
    res = run_stf_program(PROG, P4 / "defaults_enums.stf")
    assert res.failures == [] and res.passed


def test_a_parameter_without_default_still_needs_its_argument(refusal) -> None:
    err = refusal(PROG.read_text().replace("bit<8> w = 7", "bit<8> w"))
    assert "missing argument for parameter 'w' of action" in str(err)


def test_an_integer_is_not_an_enum(refusal) -> None:
    err = refusal(PROG.read_text().replace("hdr.d.c = Kind.B;", "Kind k = 8w2; hdr.d.c = k;"))
    assert "cannot" in str(err) or "mismatch" in str(err)


@pytest.mark.bmv2
def test_p4c_accepts_it_with_the_same_names(p4c_names) -> None:
    theirs, ours = p4c_names(PROG)
    assert ours == theirs


def test_a_plain_enum_is_a_32_bit_key(tmp_path: Path) -> None:
    """p4c gives BMv2 a plain enum as bit<32> holding the member's position."""
    from p4target import Switch
    from p4target.runtime.entries import Exact

    text = PROG.read_text().replace("struct meta_t { bit<8> m; }", "enum Color { Red, Green }\n"
                                    "struct meta_t { bit<8> m; Color color; }")
    text = text.replace("    apply {\n        sm.egress_spec = 2;",
                        "    action paint(bit<8> v) { hdr.d.m = v; }\n"
                        "    table by_color { key = { meta.color: exact; } actions = { paint; NoAction; } }\n"
                        "    apply {\n        sm.egress_spec = 2;")
    text = text.replace("        hdr.d.m = meta.m;\n", "        hdr.d.m = meta.m;\n        meta.color = Color.Green;\n"
                        "        by_color.apply();\n")
    assert "by_color.apply();" in text and "Color color;" in text
    prog = tmp_path / "enum_key.p4"
    prog.write_text(text)
    sw = Switch.load(prog)
    (key,) = sw.model.table("MyIngress.by_color").keys
    assert (key.name, key.bitwidth) == ("meta.color", 32)
    sw.table_add("MyIngress.by_color", {"meta.color": Exact(1)}, "MyIngress.paint", {"v": 9})
    frame = bytes.fromhex("000000000002000000000001123410000000cafe")
    (port, out), = sw.inject(1, frame)
    assert out[14:18] == bytes([0x13, 0x49, 0x03, 9])


def test_a_plain_enum_in_a_digest_is_its_position(tmp_path: Path) -> None:
    """As a key, a plain enum field of a digest is 32 bits holding the member's position."""
    from p4target import Switch

    text = PROG.read_text().replace("struct meta_t { bit<8> m; }", "enum Color { Red, Green, Blue }\n"
                                    "struct meta_t { bit<8> m; }\nstruct note_t { Color c; bit<8> m; }")
    text = text.replace("        hdr.d.m = meta.m;\n", "        hdr.d.m = meta.m;\n"
                        "        digest<note_t>(1, { Color.Blue, hdr.d.m });\n")
    assert "digest<note_t>" in text
    prog = tmp_path / "enum_digest.p4"
    prog.write_text(text)
    sw = Switch.load(prog)
    (d,) = sw.model.digests
    assert [(f.name, f.bitwidth) for f in d.fields] == [("c", 32), ("m", 8)]
    sw.inject(1, bytes.fromhex("000000000002000000000001123410000000cafe"))
    assert sw.digests() == [("note_t", (2, 5))]


def test_a_register_of_a_serializable_enum_holds_its_values(tmp_path: Path) -> None:
    from p4target import Switch

    text = PROG.read_text().replace("    action sum(", "    register<Kind>(2) kinds;\n    action sum(")
    text = text.replace("        hdr.d.m = meta.m;\n", "        hdr.d.m = meta.m;\n        kinds.write(1, Kind.B);\n")
    assert "kinds.write(1, Kind.B);" in text
    prog = tmp_path / "enum_register.p4"
    prog.write_text(text)
    sw = Switch.load(prog)
    (reg,) = [e for e in sw.model.externs if e.kind == "register"]
    assert reg.bitwidth == 8
    sw.inject(1, bytes.fromhex("000000000002000000000001123410000000cafe"))
    assert (sw.register_read("MyIngress.kinds", 0), sw.register_read("MyIngress.kinds", 1)) == (0, 2)
