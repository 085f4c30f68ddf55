"""The fused fast path (``Pipeline.fast``, p4target/compiler/fastgen.py) is invisible.

Every P4 program of the repository is listed with whether it must have a fast path;
one that must and does not fails. For every program, a switch compiled with
``fastgen.FAST_PATH`` on and one compiled with it off see the same 10,000 frames
(random ones, crafted ones that walk the program's real paths, and mutations of both:
flipped, truncated, extended, spliced), on random ports, with the program's own
entries then random entries and every default action tried, ports going down and
up: their outputs, drops, port statistics, counters, registers and digests must be
the same. The harness itself is shown to see a difference when the fast path is
wrong, and the MRC programs' paths must really take the fast path. The frames and
entries are made by fast_path_inputs.py; the cases whose results are written out
by hand are in test_fast_path_by_hand.py.
"""

from __future__ import annotations

import random

import pytest

from fast_path_inputs import ROUTER6, churn, frame_stream, own_entries, random_entries
from fast_toggle import ROOT, compiled, program
from mrc_traffic import fabric_entries, fabric_frames, nic_entries, nic_frames
from p4target import Switch
from p4target.compiler import CompiledProgram, fast_parser
from p4target.compiler.fastgen import FastSource
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
    "tests/target/frontend/p4/annotations.p4": True,
    "tests/target/frontend/p4/front_checks.p4": False,  # sub-controls: general path only
    "tests/target/frontend/p4/sample_features.p4": True,
    "tests/target/frontend/p4/controller_struct.p4": False,  # struct-typed header fields: general path only
    "tests/target/frontend/p4/tuple_fields.p4": True,
    "tests/target/frontend/p4/generic_types.p4": True,
    "tests/target/frontend/p4/list_digest.p4": True,
    "tests/target/frontend/p4/lookahead_stack.p4": False,  # lookahead of a struct: general path only
    "tests/target/frontend/p4/varbit_fields.p4": False,  # varbit: general path only
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
    "tests/target/language/p4/direct_apply.p4": False,  # sub-controls/parsers: general path only
    "tests/target/language/p4/named_args.p4": True,
    "tests/target/language/p4/value_sets.p4": True,
    "tests/target/language/p4/defaults_enums.p4": True,
    "tests/target/language/p4/inline_profiles.p4": True,
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
    """The same frames through the compiled fast path (p4target/accel/native.py):
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
        for name, f in zip(names, batch, strict=False):
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
