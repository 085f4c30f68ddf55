"""The fast path (p4target/compiler/fastgen.py) on cases whose results are written
out here by hand, not only compared with the general path: fast_storage.p4's
output, the general path taken when a port is rate-limited, nic.p4's action
selector and fast_lookups.p4's LPM tables following control-plane writes made
after the fast path was bound, and the generated code's forms (fields given no
fresh value, the MRC programs' frame tail, checksum updates sharing a test).
test_fast_path.py is the differential test over every program.
"""

from __future__ import annotations

from pathlib import Path

from fast_path_inputs import MY_MAC, ROUTED, ROUTER6, STORAGE, router6_entries
from fast_toggle import ROOT, compiled, program
from p4target import Switch
from p4target.compiler import compile_file, fast_compiler
from p4target.compiler.fast_prune import prune_for_fast
from p4target.runtime.entries import Exact, Group, Lpm, Member, Ternary
from test_codegen_equivalence import observe


def test_storage_program_output_on_the_fast_path() -> None:
    """fast_storage.p4, worked out by hand: the copy keeps the original Ethernet
    header, tags[1] is zeroed by setValid and then gets its length (2 tags parsed),
    tags[2] stays invalid, the register read after its write sees the new value."""
    a, b = bytes.fromhex("0a0000000001"), bytes.fromhex("0b0000000002")
    frame = a + b + b"\x88\xb5" + bytes([1, 4, 0x11, 0x11, 2, 4, 0x22, 0x22]) + b"\x00payload"
    want = (a + a + b"\x88\xb5" + a + b + b"\x88\xb5" + bytes([1, 4, 0x11, 0x11, 0, 2, 0, 0])
            + b"\x00payload")
    for fast in (True, False):
        sw = Switch(program(STORAGE, fast), seed=7)
        # the first frame takes the general path (the fast path is made for it), the second the fast one
        assert sw.inject(3, frame) == [(1, want)]
        assert sw.inject(3, frame) == [(1, want)]
        assert sw.fast_packets == (1 if fast else 0)
        assert sw.register_read("FsIngress.seq", 0) == 2
        assert sw.counter_read("FsIngress.rx", 3) == (2, 2 * len(frame))
        assert sw.counter_read("FsEgress.tx", 1) == (2, 2 * len(frame))
        extra = a + b + b"\x88\xb6"
        assert sw.inject(3, extra) == [(1, a + a + b"\x88\xb6" + extra + (2).to_bytes(4, "big")
                                        + (3).to_bytes(4, "big"))]
        assert sw.fast_packets == (2 if fast else 0)


def test_general_path_is_taken_when_a_port_is_rate_limited() -> None:
    sw = Switch(program(ROUTER6, True), seed=7)
    router6_entries(sw)
    f = MY_MAC.to_bytes(6, "big") + bytes(6) + b"\x86\xdd" + bytes([0x60, 0, 0, 0, 0, 8, 17, 64]) \
        + bytes(16) + ROUTED + bytes(8)
    assert sw.inject(1, f) == sw.inject(1, f)  # the first frame makes the fast path
    before = sw.fast_packets
    assert before == 1
    sw.set_queue_rate(2, 1e6)
    sw.inject(1, f)
    assert sw.fast_packets == before


# ---- the action selector on the fast path ------------------------------------------------
def spray_switch(fast: bool) -> Switch:
    """nic.p4 with per-packet spraying of non-MRC traffic over members 0..3 (plane
    ports 2..5, member m's carrier names spine 0x200 + m), each watching its port."""
    from mrc_traffic import GW, NIC, PLANE_PORTS, addr, usid

    sw = Switch(program("p4src/nic.p4", fast), seed=7)
    sw.table_add("NicIngress.port_role", {"standard_metadata.ingress_port": Exact(1)},
                 "NicIngress.host_port", {"nic_addr": addr(NIC), "gw_addr": addr(GW), "gw_mac": 0x020000000C01})
    for port in PLANE_PORTS:
        sw.table_add("NicEgress.egress_port", {"standard_metadata.egress_port": Exact(port)},
                     "NicEgress.to_plane", {"plane": port - 2, "src_mac": 0x020000000D00 + port,
                                            "dst_mac": 0x020000000E00 + port})
    sw.table_add("NicIngress.spray_mode", {"meta.is_mrc": Ternary(0, 0), "hdr.ipv6.traffic_class": Ternary(0, 0),
                                           "hdr.ipv6.next_hdr": Ternary(0, 0)},
                 "NicIngress.spray_per_packet", priority=1)
    for m, port in enumerate(PLANE_PORTS):
        sw.act_prof_add_member("NicIngress.spray_selector", m, "NicIngress.set_path",
                               {"port": port, "plane": m, "carrier": addr(usid(0x100 + m, 0x200 + m, 0xE001))})
    sw.act_prof_add_group("NicIngress.spray_selector", 1, [(m, 1, p) for m, p in enumerate(PLANE_PORTS)])
    sw.table_add("NicIngress.spray", {"hdr.ipv6.dst_addr": Lpm(0xFD00 << 112, 16)}, Group(1))
    return sw


def spray_frame() -> bytes:
    from mrc_traffic import HOST, addr

    udp = (40000).to_bytes(2, "big") + (5000).to_bytes(2, "big") + (12).to_bytes(2, "big") + b"\0\0" + b"data"
    ip6 = bytes([0x60, 0, 0, 0]) + len(udp).to_bytes(2, "big") + bytes([17, 64]) + addr(HOST).to_bytes(16, "big") \
        + (0xFD00_0000_0002_0001 << 64 | 2).to_bytes(16, "big")
    return (0x020000000C01).to_bytes(6, "big") + (0x020000000099).to_bytes(6, "big") + b"\x86\xdd" + ip6 + udp


def spray_outputs(sws: list[Switch], n: int) -> list[int | None]:
    """``n`` frames through both switches (equal outputs); the fabric-side spine uSID
    each carried (from its outer destination, bytes 14 + 24 + 4..6), None for a drop."""
    out = []
    for _ in range(n):
        got = [sw.inject(1, spray_frame()) for sw in sws]
        assert got[0] == got[1]
        if not got[0]:
            out.append(None)
            continue
        (port, frame), = got[0]
        spine = int.from_bytes(frame[14 + 24 + 6:14 + 24 + 8], "big")
        assert port == 2 + spine - 0x200  # member m leaves on plane port 2 + m
        out.append(spine - 0x200)
    return out


def test_selector_follows_the_control_plane_on_the_fast_path() -> None:
    """The fast path chooses a selector member from slot lists the runtime keeps up
    to date: after the first frame, a watch port going down and up, a group modified
    (weights, fewer members), a member modified, the entry changed to a member and
    a group with no live member (a miss: dropped with no path) all show at once. The
    spray key is a per-packet sequence number and the hash the identity: frame k
    takes live slot k % (number of slots)."""
    sws = [spray_switch(True), spray_switch(False)]
    assert spray_outputs(sws, 6) == [0, 1, 2, 3, 0, 1]  # frames 0..5
    sws[0].set_port_status(3, False), sws[1].set_port_status(3, False)  # member 1 leaves
    assert spray_outputs(sws, 6) == [0, 2, 3, 0, 2, 3]  # frames 6..11 over slots [0, 2, 3]
    for sw in sws:
        sw.set_port_status(3, True)
        sw.act_prof_modify_group("NicIngress.spray_selector", 1, [(0, 2, 2), (3, 1, 5)])
    assert spray_outputs(sws, 6) == [0, 0, 3, 0, 0, 3]  # frames 12..17 over slots [0, 0, 3]
    for sw in sws:
        sw.act_prof_modify_member("NicIngress.spray_selector", 0, "NicIngress.set_path",
                                  {"port": 4, "plane": 2, "carrier": int.from_bytes(bytes.fromhex(
                                      "fcbbbb00010202020000000000000000"), "big")})
    assert spray_outputs(sws, 3) == [2, 2, 3]  # member 0 now names spine 0x202 on port 4
    for sw in sws:
        sw.table_delete("NicIngress.spray", {"hdr.ipv6.dst_addr": Lpm(0xFD00 << 112, 16)})
        sw.table_add("NicIngress.spray", {"hdr.ipv6.dst_addr": Lpm(0xFD00 << 112, 16)}, Member(3))
    assert spray_outputs(sws, 2) == [3, 3]
    for sw in sws:
        sw.table_delete("NicIngress.spray", {"hdr.ipv6.dst_addr": Lpm(0xFD00 << 112, 16)})
        sw.table_add("NicIngress.spray", {"hdr.ipv6.dst_addr": Lpm(0xFD00 << 112, 16)}, Group(1))
        sw.set_port_status(2, False)
        sw.set_port_status(4, False)
        sw.set_port_status(5, False)
    assert spray_outputs(sws, 2) == [None, None]  # no live member: the default, no path
    assert observe(sws[0]) == observe(sws[1])
    assert sws[0].fast_packets == 6 + 6 + 6 + 3 + 2 + 2 - 1  # all but the very first frame


# ---- tables looked up in place ---------------------------------------------------------
LOOKUPS = "tests/target/compiler/p4/fast_lookups.p4"


def lookup_outputs(sws: list[Switch], probes: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """(lpm_out, pair_out) of each probe (tag, dst) through both switches (equal
    outputs, the fast one on its fast path after the first frame ever)."""
    out = []
    for tag, dst in probes:
        frame = tag.to_bytes(2, "big") + dst.to_bytes(4, "big") + bytes([0xEE, 0xEE]) + b"tail"
        got = [sw.inject(0, frame) for sw in sws]
        assert got[0] == got[1]
        (port, data), = got[0]
        assert port == 1 and data[:6] == frame[:6] and data[8:] == b"tail"
        out.append((data[6], data[7]))
    return out


def test_lpm_lookups_in_place_follow_the_control_plane() -> None:
    """Overlapping prefixes (longest wins, /0 catches the rest), the exact part of an
    exact + LPM key, the default action, and entries added and removed after the fast
    path was made: the outputs written out by hand, on both paths."""
    sws = [Switch(program(LOOKUPS, f), seed=7) for f in (True, False)]
    for sw in sws:
        for prefix, plen, v in ((0x0A000000, 8, 1), (0x0A010000, 16, 2), (0x0A010100, 24, 3)):
            sw.table_add("FlIngress.by_dst", {"hdr.p.dst": Lpm(prefix, plen)}, "FlIngress.lpm_hit", {"v": v})
        sw.table_add("FlIngress.by_tag_dst", {"hdr.p.tag": Exact(7), "hdr.p.dst": Lpm(0x0A000000, 8)},
                     "FlIngress.pair_hit", {"v": 0x71})
        sw.table_add("FlIngress.by_tag_dst", {"hdr.p.tag": Exact(7), "hdr.p.dst": Lpm(0x0A010000, 16)},
                     "FlIngress.pair_hit", {"v": 0x72})
        sw.table_add("FlIngress.by_tag_dst", {"hdr.p.tag": Exact(8), "hdr.p.dst": Lpm(0x0A010000, 16)},
                     "FlIngress.pair_hit", {"v": 0x82})
    probes = [(7, 0x0A010105), (7, 0x0A01FF05), (7, 0x0AFF0000), (8, 0x0A010105), (8, 0x0A020000),
              (9, 0x0A010105), (7, 0x0B000000)]
    first = [(3, 0x72), (2, 0x72), (1, 0x71), (3, 0x82), (1, 0xEE), (3, 0xEE), (0xEE, 0xEE)]
    assert lookup_outputs(sws, probes) == first
    assert lookup_outputs(sws, probes) == first  # the fast path now
    for sw in sws:
        sw.table_delete("FlIngress.by_dst", {"hdr.p.dst": Lpm(0x0A010100, 24)})  # a prefix length goes
        sw.table_add("FlIngress.by_dst", {"hdr.p.dst": Lpm(0, 0)}, "FlIngress.lpm_hit", {"v": 9})
        sw.table_delete("FlIngress.by_tag_dst", {"hdr.p.tag": Exact(7), "hdr.p.dst": Lpm(0x0A010000, 16)})
        sw.table_add("FlIngress.by_tag_dst", {"hdr.p.tag": Exact(9), "hdr.p.dst": Lpm(0x0A010100, 24)},
                     "FlIngress.pair_hit", {"v": 0x93})
        sw.table_set_default("FlIngress.by_tag_dst", "FlIngress.pair_hit", {"v": 0xDD})
    assert lookup_outputs(sws, probes) == [(2, 0x71), (2, 0x71), (1, 0x71), (2, 0x82), (1, 0xDD), (2, 0x93),
                                           (9, 0xDD)]
    for sw in sws:
        sw.table_clear("FlIngress.by_dst")
        sw.table_clear("FlIngress.by_tag_dst")
    assert lookup_outputs(sws, probes) == [(0xEE, 0xDD)] * len(probes)
    assert sws[0].fast_packets == 4 * len(probes) - 1
    assert observe(sws[0]) == observe(sws[1])


FIRST_PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct hs_t { h_t h; }
struct m_t { bit<8> p; bit<8> q; bit<8> a; bit<8> b; bit<8> c; bit<8> d; bit<8> e; bit<8> f; bit<8> g; }
parser P(packet_in pk, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    state start { meta.p = 1; pk.extract(hdr.h); meta.f = meta.q; transition accept; }
}
control V(inout hs_t hdr, inout m_t meta) { apply { } }
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    counter(4, CounterType.packets) c;
    table t { key = { hdr.h.a: exact; } actions = { NoAction; } }
    apply {
        c.count((bit<32>)meta.d);
        meta.q = 2;
        meta.a = 3;
        meta.b = meta.a;
        meta.c = meta.c + 1;
        meta.p = 4;
        t.apply();
        meta.e = 5;
        if (hdr.h.a == 1) {
            meta.g = meta.g + 5;
            hdr.h.a = meta.g;
        }
        sm.egress_spec = 1;
    }
}
control E(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) { apply { } }
control C(inout hs_t hdr, inout m_t meta) { apply { } }
control D(packet_out pk, in hs_t hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def test_fields_assigned_first_get_no_fresh_value(tmp_path: Path) -> None:
    """Only places every packet assigns before anything names them are left out of
    the fast path's initial values: meta.p (the start state's first statement),
    meta.a and meta.b (top of ingress, after a counter count); not meta.q (the
    parser read it), meta.c (read by its own assignment), meta.d (the count read it),
    meta.e (after a table apply) or sm.egress_spec (likewise). meta.g, which only
    ingress names, gets its right before the statement naming it, inside the branch
    that reads it; meta.e, which only ingress names too, none (the statement naming it
    first assigns it)."""
    from p4target.frontend.lexer import tokenize
    from p4target.frontend.parser import parse_tokens
    from p4target.frontend.preprocessor import preprocess

    src = tmp_path / "first.p4"
    src.write_text(FIRST_PROGRAM)
    ast = parse_tokens(tokenize(preprocess(src, (), {})))
    got = fast_compiler.assigned_first(ast, ["P", "V", "I", "E", "C", "D"])
    assert got == {("meta", "p"), ("meta", "a"), ("meta", "b")}
    sws = [Switch(compile_file(src) if f else compiled(src, False), seed=7) for f in (True, False)]
    lines = sws[0].program.fast_source().text.splitlines()
    top = lines.index("        _dl = len(data)  # the frame's length (data is bytes)")
    init = " ".join(lines[top:next(i for i in range(top, len(lines)) if lines[i].lstrip().startswith("if "))])
    assert "f_meta__q" in init and "f_meta__a" not in init and "f_meta__b" not in init
    assert "f_meta__e" not in init and "f_meta__g" not in init
    # meta.e's first statement assigns it without reading it: no fresh value before it
    assert "f_meta__e = 0" not in [x.strip() for x in lines] and "f_meta__e = 5" in [x.strip() for x in lines]
    at = {n: next(i for i, x in enumerate(lines) if x.strip() == f"f_meta__{n} = 0") for n in "g"}
    assert lines[at["g"] - 1].strip().startswith("if ") and "f_meta__g + 5" in lines[at["g"] + 1]
    for a, out in ((7, 7), (1, 5), (7, 7), (1, 5)):
        outs = [sw.inject(0, bytes([a]) + b"rest") for sw in sws]
        assert outs[0] == outs[1] == [(1, bytes([out]) + b"rest")]
    assert sws[0].fast_packets == 3


def test_frame_tail_of_the_mrc_programs() -> None:
    """fabric.p4's deparser ends with headers nothing changes on the fast path (its
    trimming rewrites UDP, but only before a truncate, where the fast path gives up),
    which the parser extracts last and in emit order: the fast path emits them as the
    frame's bytes from UDP (or ICMPv6) on; the inner IPv6 header before them is not
    changed either, but a verify follows its extract. nic.p4 answers neighbour solicitations by writing ICMPv6
    and adding the NDP option, so its run of such headers is UDP..PROBE, before
    them."""
    fc = fast_compiler.FastCompiler(prune_for_fast(program("p4src/fabric.p4", True)._fast_builder.args[0]),
                                    ROOT / "p4src/fabric.p4")
    fc.compile()
    tail, starts, at_end = fc.frame_tail()
    assert [p[1] for p in tail] == ["udp", "bth", "reth", "immdt", "aeth", "sack", "probe", "icmpv6", "ndp",
                                    "ndp_option"]
    assert starts == {("hdr", "udp"), ("hdr", "icmpv6")} and at_end
    nc = fast_compiler.FastCompiler(prune_for_fast(program("p4src/nic.p4", True)._fast_builder.args[0]),
                                    ROOT / "p4src/nic.p4")
    nc.compile()
    tail, starts, at_end = nc.frame_tail()
    assert [p[1] for p in tail] == ["udp", "bth", "reth", "immdt", "aeth", "sack", "probe"]
    assert starts == {("hdr", "udp")} and not at_end
    # nic.p4 reads the UDP destination port and the BTH's pkey (the EV) at several
    # places: read once, at the extract
    assert nc.split_bytes == {("hdr", "bth", "pkey"), ("hdr", "udp", "dst_port")} and not fc.split_bytes
    # Ethernet: every parse extracts it and nothing changes its validity (no local)
    assert fc.always_valid == nc.always_valid == {("hdr", "ethernet")}
    assert "f_hdr__ethernet___v" not in fc.names.values()
    # counters: rx_port is counted by ingress's first statement (no -1, no test);
    # tx_port by a statement of egress's body (most packets: a local); the drop
    # counters, inside branches, go to the _cn list (trimmed is counted after the
    # truncate: never on the fast path)
    assert fc.count_mode("X_FabricIngress_rx_port") == "always"
    assert fc.count_mode("X_FabricEgress_tx_port") == "local"
    assert {fc.count_mode(x) for x in ("X_FabricIngress_drops", "X_FabricEgress_drops")} == {"list"}


SHARED_TEST_PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> on; bit<8> kind; bit<16> c1; bit<16> c2; bit<16> c3; }
struct hs_t { h_t h; }
struct m_t { bit<8> unused; }
parser P(packet_in pk, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control V(inout hs_t hdr, inout m_t meta) { apply { } }
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) { apply { sm.egress_spec = 1; } }
control E(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) { apply { } }
control C(inout hs_t hdr, inout m_t meta) {
    apply {
        update_checksum(hdr.h.on == 1 && hdr.h.kind == 1, { hdr.h.kind, 8w1 }, hdr.h.c1, HashAlgorithm.csum16);
        update_checksum(hdr.h.on == 1 && hdr.h.kind == 2, { hdr.h.kind, 8w2 }, hdr.h.c2, HashAlgorithm.csum16);
        update_checksum(hdr.h.c3 == 0 && hdr.h.kind == 3, { hdr.h.kind, 8w3 }, hdr.h.c3, HashAlgorithm.csum16);
        update_checksum(hdr.h.c3 == 0 && hdr.h.kind == 4, { hdr.h.kind, 8w4 }, hdr.h.c3, HashAlgorithm.csum16);
    }
}
control D(packet_out pk, in hs_t hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def test_checksum_updates_share_their_first_test(tmp_path: Path) -> None:
    """Checksum updates one after the other whose conditions start with the same
    test run it once, unless one of them writes what it reads (c3 == 0 then c3 is
    written: each update tests it again). The checksums written out: csum16 of the
    two bytes (kind, n) is ~(kind << 8 | n) for these small values."""
    src = tmp_path / "shared.p4"
    src.write_text(SHARED_TEST_PROGRAM)
    sws = [Switch(compile_file(src) if f else compiled(src, False), seed=7) for f in (True, False)]
    text = sws[0].program.fast_source().text
    lines = text.splitlines()
    assert sum(">> 56)) == 1" in x for x in lines) == 1  # `on == 1` once, around the first two
    assert sum("(f_hdr__h__c3 == 0)" in x for x in lines) == 2  # c3 == 0: tested by both
    for on, kind, c3, want in ((1, 1, 0, (0xFEFE, 0, 0)), (1, 2, 0, (0, 0xFDFD, 0)), (0, 2, 0, (0, 0, 0)),
                               (1, 3, 0, (0, 0, 0xFCFC)), (0, 4, 0, (0, 0, 0xFBFB)), (1, 4, 5, (0, 0, 5))):
        frame = bytes([on, kind]) + bytes(4) + c3.to_bytes(2, "big") + b"x"
        for _ in range(2):
            outs = [sw.inject(0, frame) for sw in sws]
            assert outs[0] == outs[1] == [(1, bytes([on, kind]) + b"".join(v.to_bytes(2, "big") for v in want)
                                          + b"x")]
    assert sws[0].fast_packets == 11
