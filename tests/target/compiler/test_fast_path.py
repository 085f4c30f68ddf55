"""The fused fast path (``Pipeline.fast``, p4target/compiler/fastgen.py) is invisible.

Every P4 program of the repository is listed with whether it must have a fast path;
one that must and does not fails. For every program, a switch compiled with
``fastgen.FAST_PATH`` on and one compiled with it off see the same 10,000 frames
(random ones, crafted ones that walk the program's real paths, and mutations of both:
flipped, truncated, extended, spliced), on random ports, with the program's own
entries then random entries and every default action tried, ports going down and
up: their outputs, drops, port statistics, counters, registers and digests must be
the same. The harness itself is shown to see a difference when the fast path is
wrong, and the MRC programs' paths must really take the fast path.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from fast_path_inputs import (MY_MAC, ROUTED, ROUTER6, STORAGE, churn, frame_stream, own_entries, random_entries,
                              router6_entries)
from fast_toggle import ROOT, compiled, program
from mrc_traffic import fabric_entries, fabric_frames, nic_entries, nic_frames
from p4target import Switch
from p4target.compiler import CompiledProgram, compile_file, fast_compiler, fast_parser
from p4target.compiler.fast_prune import prune_for_fast
from p4target.compiler.fastgen import FastSource
from p4target.runtime.entries import Exact, Group, Lpm, Member, Ternary
from test_codegen_equivalence import observe, set_defaults

# every P4 program of the repository -> must it have a fast path?
PROGRAMS: dict[str, bool] = {
    "p4src/fabric.p4": True,
    "p4src/nic.p4": True,
    "bench/p4/router6.p4": True,
    "tests/p4/constructs/arith.p4": True,
    "tests/p4/constructs/basic_l3.p4": True,
    "tests/p4/constructs/checksum.p4": True,
    "tests/p4/constructs/parser_features.p4": False,  # varbit, header union, stack .last/.lastIndex
    "tests/p4/constructs/tables_externs.p4": True,
    "tests/p4runtime/p4/rt_all.p4": True,
    "tests/p4runtime/p4/rt_v2.p4": True,
    "tests/target/cli/p4/spray.p4": True,
    "tests/target/runtime/p4/checksum_ops.p4": True,
    "tests/target/runtime/p4/tables_ops.p4": True,
    "tests/target/runtime/p4/v1switch_ops.p4": True,
    "tests/target/stf/p4/l3_acl.p4": True,
    "tests/target/stf/p4/mcast_clone.p4": True,
    "tests/target/compiler/p4/fast_storage.p4": True,
    "tests/target/compiler/p4/fast_lookups.p4": True,
    "tests/target/frontend/p4/function_macros.p4": True,
    "tests/target/frontend/p4/guard_macros.p4": True,
    "tests/target/frontend/p4/indirect_default.p4": True,
    "tests/target/frontend/p4/p4c_basic_routing.p4": True,
    "tests/target/frontend/p4/p4c_issue4969.p4": True,
    "tests/target/frontend/p4/p4info_actions.p4": True,
    "tests/target/language/p4/for_loops.p4": False,  # for loops: general path only
    "tests/target/language/p4/sub_blocks.p4": False,  # sub-controls/parsers: general path only
    "tests/target/language/p4/header_eq.p4": False,  # == on headers: general path only
    "tests/target/language/p4/struct_fields.p4": False,  # struct-typed header fields: general path only
    "tests/target/language/p4/union_stack.p4": False,  # stack of unions: general path only
    "tests/target/language/p4/varbit_checksum.p4": False,  # varbit: general path only
    "tests/target/language/p4/parser_empty_states.p4": True,
    "tests/target/language/p4/entry_priority.p4": True,
    "tests/target/language/p4/local_init_calls.p4": False,  # P4 function calls: general path only
    "tests/target/language/p4/compound_assign.p4": False,  # a P4 function call: general path only
    "tests/target/language/p4/copy_inout.p4": False,  # composite inout arguments: general path only
    "tests/target/language/p4/exit_copy_out.p4": True,
    "tests/target/language/p4/eval_order.p4": False,  # P4 function calls: general path only
    "tests/target/language/p4/table_bound_args.p4": True,
}
FRAMES = 10_000


# ---- the differential run ---------------------------------------------------------------
def run(prog, rel: str, seed: int, n: int = FRAMES, native: bool = False) -> tuple[list, int]:
    """Outputs and observed state of ``n`` frames; also how many took the fast path
    (the compiled one with ``native``, else the interpreted one)."""
    rng = random.Random(seed)
    sw = Switch(prog, seed=7, native=native)
    if native:
        sw.bind_fast_path(wait_native=True)
        assert sw.fast_kind == "native", f"{rel}: no compiled fast path: {prog.native_fast_path().error}"
    own_entries(rel, sw, random.Random(seed))
    stream = frame_stream(rel, random.Random(seed + 1), n)
    results: list = []
    rounds = 4
    per = len(stream) // rounds
    for rnd in range(rounds):
        if rnd == rounds - 1:  # (the last round only: the others keep forwarding)
            churn(sw, rng)
        if rnd:
            random_entries(sw, rng)
            set_defaults(sw, rng)
        for f in stream[rnd * per:(rnd + 1) * per]:
            port = rng.choice([1, 1, 2, 3, 4, 5, rng.randrange(0, 8)])
            if rng.random() < 0.004:  # a port goes down or up (watch ports, port_down drops)
                sw.set_port_status(rng.randrange(0, 8), rng.random() < 0.7)
            results.append(sw.inject(port, f))
        results.append(observe(sw))
        for p in range(8):
            sw.set_port_status(p, True)
    results.append(sw.digests())
    return results, sw.fast_packets


_GENERAL: dict[str, list] = {}


def general_run(rel: str) -> list:
    """``run`` of the program without a fast path (once per program)."""
    if rel not in _GENERAL:
        plain = program(rel, False)
        assert plain.fast_source() is None
        want, none = run(plain, rel, 1)
        assert none == 0
        _GENERAL[rel] = want
    return _GENERAL[rel]


@pytest.mark.parametrize("rel", sorted(PROGRAMS))
def test_fast_path_is_invisible(rel: str) -> None:
    fast = program(rel, True)
    assert fast.fast_source() is not None or not PROGRAMS[rel], f"{rel} must have a fast path"
    got, taken = run(fast, rel, 1)
    want = general_run(rel)
    assert got == want
    forwarded = [o for r in want[:-1] if isinstance(r, list) for o in r]
    # a fast path that gives every frame up compares nothing (p4c_issue4969.p4's read
    # egress_spec before giving it a value, and so took none)
    assert taken > 0 or not PROGRAMS[rel], f"{rel}: no frame took the fast path"
    if rel in (ROUTER6, "p4src/fabric.p4", "p4src/nic.p4"):
        assert taken > FRAMES // 10, f"{rel}: only {taken} of {FRAMES} frames took the fast path"
        assert len(forwarded) > FRAMES // 20  # the comparison covers real forwarding


@pytest.mark.parametrize("rel", sorted(r for r, must in PROGRAMS.items() if must))
def test_compiled_fast_path_is_invisible(rel: str, native_fast_path: None) -> None:
    """The same frames through the compiled fast path (p4target/compiler/native.py):
    the same outputs, counters and registers as the general path."""
    got, taken = run(program(rel, True), rel, 1, native=True)
    assert got == general_run(rel)
    assert taken > 0, f"{rel}: no frame took the compiled fast path"


def test_every_program_of_the_repository_is_listed() -> None:
    """Every .p4 outside include directories is a program and must be listed above."""
    found = set()
    for p in ROOT.rglob("*.p4"):
        rel = p.relative_to(ROOT)
        if rel.parts[0].startswith(".") or "include" in rel.parts or "inc" in rel.parts:
            continue
        found.add(str(rel))
    assert found == set(PROGRAMS)


def test_the_comparison_sees_a_wrong_fast_path() -> None:
    """A fast path that decrements the hop limit twice must be caught."""
    good = program("p4src/fabric.p4", True)
    fast = good.fast_source()
    wrong = "f_hdr__ipv6__hop_limit = ((f_hdr__ipv6__hop_limit - 1) & 0xff)"
    assert wrong in fast.text
    bad_fast = FastSource(fast.text.replace(wrong, wrong.replace("- 1)", "- 2)")), fast.uses_clock)
    bad = CompiledProgram(good.model, good.python_source, good.errors, good.path, bad_fast)
    got, _ = run(bad, "p4src/fabric.p4", 3, 400)
    want, _ = run(program("p4src/fabric.p4", False), "p4src/fabric.p4", 3, 400)
    assert got != want


KINDS = {
    "p4src/fabric.p4": (fabric_entries, fabric_frames,
                        ["uN shift", "uN end of carrier + SRH", "uN PSP + SRH + inner IPv6", "uA",
                         "uA at the end", "End/End.X with SRH", "IPv6 route", "unknown uSID", "no route"]),
    "p4src/nic.p4": (nic_entries, nic_frames,
                     ["MRC encap (EXPLICIT/GENERATED)", "spray encap", "no L4", "NDP solicitation",
                      "ping gateway", "decap", "decap with SRH", "not my SID"]),
}


@pytest.mark.parametrize("rel", sorted(KINDS))
def test_mrc_paths_take_the_fast_path(rel: str) -> None:
    """Each crafted kind of packet, many times: both switches agree and the fast one
    handled the forwarding kinds without the general path."""
    entries, make, names = KINDS[rel]
    sws = [Switch(program(rel, f), seed=7) for f in (True, False)]
    for sw in sws:
        entries(sw, random.Random(1)) if rel.endswith("nic.p4") else entries(sw)
    rng = random.Random(9)
    fast_kinds: dict[str, int] = {}
    for _ in range(60):
        batch = make(rng)
        for name, f in zip(names, batch):
            port = 1 if rel.endswith("fabric.p4") or name not in ("decap", "decap with SRH", "not my SID") else 2
            before = sws[0].fast_packets
            outs = [sw.inject(port, f) for sw in sws]
            assert outs[0] == outs[1], name
            if outs[0]:
                fast_kinds[name] = fast_kinds.get(name, 0) + (sws[0].fast_packets - before)
    assert observe(sws[0]) == observe(sws[1])
    must = {"p4src/fabric.p4": ["uN shift", "uN end of carrier + SRH", "uN PSP + SRH + inner IPv6", "uA",
                                "End/End.X with SRH", "IPv6 route"],
            "p4src/nic.p4": ["MRC encap (EXPLICIT/GENERATED)", "spray encap", "decap", "decap with SRH"]}[rel]
    for name in must:
        assert fast_kinds.get(name, 0) > 0, f"{rel}: no '{name}' packet took the fast path ({fast_kinds})"


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


def test_parser_with_join_states_is_invisible(monkeypatch: pytest.MonkeyPatch) -> None:
    """The MRC parser is pasted whole (each state on every path into it); with the
    paste limit at 0 its shared states are emitted once behind ``_ps`` tests
    instead, and that form too must give what the general path gives."""
    assert "if _ps ==" not in program("p4src/fabric.p4", True).fast_source().text
    monkeypatch.setattr(fast_parser, "PASTE_PARSER_MAX", 0)
    joined = compiled(ROOT / "p4src/fabric.p4", True)
    assert "if _ps ==" in joined.fast_source().text
    got, taken = run(joined, "p4src/fabric.p4", 5, 3000)
    want, _ = run(program("p4src/fabric.p4", False), "p4src/fabric.p4", 5, 3000)
    assert got == want
    assert taken > 300


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
    # nic.p4 reads the UDP ports at several places: read once, at the extract
    assert nc.split_bytes == {("hdr", "udp", "src_port"), ("hdr", "udp", "dst_port")} and not fc.split_bytes
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
