"""The generated code's speed-ups change nothing a packet can observe.

The straight-line parser (an acyclic parser inlined into ``Pipeline.parse``) and the
comparison dispatch of small tables (empty actions skipped, short action bodies
pasted into the table helper) can be switched off
(``assembly.INLINE_PARSER``, ``tables.INLINE_DISPATCH``). For every program of the
repository, random and crafted frames through a switch built each way give the same
outputs, drops, port statistics, counters and registers, with every table's default
action set in turn to each of its actions (random arguments), so the dispatch runs
every action.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from p4target import Switch
from p4target.compiler import assembly, compile_file, tables
from p4target.errors import EntryError
from p4target.runtime.externs import Counter, Register

ROOT = Path(__file__).resolve().parents[3]
PROGRAMS = [
    ROOT / "p4src" / "fabric.p4",
    ROOT / "p4src" / "nic.p4",
    ROOT / "bench" / "p4" / "router6.p4",
    *sorted((ROOT / "tests" / "p4" / "constructs").glob("*.p4")),
    *sorted((ROOT / "tests" / "target" / "runtime" / "p4").glob("*.p4")),
]
PROGRAMS = [p for p in PROGRAMS if p.is_file()]


def compiled(path: Path, fast: bool):
    saved = assembly.INLINE_PARSER, tables.INLINE_DISPATCH
    assembly.INLINE_PARSER = tables.INLINE_DISPATCH = fast
    try:
        return compile_file(path)
    finally:
        assembly.INLINE_PARSER, tables.INLINE_DISPATCH = saved


def eth(etype: int, rng: random.Random) -> bytes:
    return rng.randbytes(12) + etype.to_bytes(2, "big")


def ipv6(nh: int, rng: random.Random, dst: bytes | None = None) -> bytes:
    return (bytes([0x60, 0, 0, 0]) + rng.randbytes(2) + bytes([nh, rng.choice([0, 1, 2, 64, 255])])
            + rng.randbytes(16) + (dst if dst is not None else rng.randbytes(16)))


def ipv4(proto: int, rng: random.Random) -> bytes:
    return bytes([0x45, 0]) + rng.randbytes(7) + bytes([proto]) + rng.randbytes(10)


def frames(rng: random.Random) -> list[bytes]:
    out: list[bytes] = [b"", bytes(13), bytes(14)]
    for n in range(60):
        out.append(rng.randbytes(rng.randrange(0, 160)))
    srv6 = bytes.fromhex("fcbbbb00010000000000000000000000")
    for _ in range(6):
        for nh in (17, 6, 58, 43, 41, 4, 0, 59):
            tail = rng.randbytes(rng.randrange(0, 120))
            if nh == 43:  # a segment routing header: type 4, a few segments
                segs = rng.randrange(0, 4)
                tail = (bytes([17, 2 * segs, 4, segs, max(segs - 1, 0), 0, 0, 0])
                        + rng.randbytes(16 * segs) + tail)
            f = eth(0x86DD, rng) + ipv6(nh, rng, srv6 if rng.random() < 0.5 else None) + tail
            out.append(f)
            out.append(f[:rng.randrange(0, len(f) + 1)])
        for proto in (17, 6, 1):
            out.append(eth(0x0800, rng) + ipv4(proto, rng) + rng.randbytes(rng.randrange(0, 64)))
        for etype in (0x8100, 0x0806, 0x88CC, 0x1234, 0x9000):
            out.append(eth(etype, rng) + rng.randbytes(rng.randrange(0, 80)))
    return out


def set_defaults(sw: Switch, rng: random.Random) -> None:
    """Every non-const table default: a random one of its actions, random arguments."""
    for t in sw.model.tables:
        if t.default_is_const:
            continue
        refs = [r for r in t.actions if r.scope != "table_only"]
        if not refs:
            continue
        ref = rng.choice(refs)
        act = sw.model.action(ref.name)
        params = {p.name: rng.getrandbits(p.bitwidth) if rng.random() < 0.7 else rng.randrange(0, 4)
                  for p in act.params}
        try:
            sw.table_set_default(t.name, ref.name, params)
        except EntryError:
            pass


def observe(sw: Switch) -> dict:
    state: dict = {"drops": dict(sw.drops),
                   "ports": {p: vars(s).copy() for p, s in sorted(sw.port_stats.items())}}
    for name, obj in sw.rt.externs.items():
        if isinstance(obj, Counter):
            state[name] = (list(obj.packets), list(obj.bytes))
        elif isinstance(obj, Register):
            state[name] = list(obj.cells)
    return state


def run(program, seed: int) -> list:
    rng = random.Random(seed)
    sw = Switch(program, seed=7)
    results = []
    for _ in range(4):
        set_defaults(sw, rng)
        for f in frames(rng):
            port = rng.randrange(0, 8)
            results.append(sw.inject(port, f))
        results.append(observe(sw))
    results.append(sw.digests())
    return results


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: str(p.relative_to(ROOT)))
def test_fast_codegen_is_invisible(path: Path) -> None:
    fast = compiled(path, True)
    plain = compiled(path, False)
    for seed in (1, 2):
        assert run(fast, seed) == run(plain, seed)


def test_router6_parser_is_straight_line() -> None:
    src = compiled(ROOT / "bench" / "p4" / "router6.p4", True).python_source
    assert "while state is not None" not in src
    assert "while state is not None" in compiled(ROOT / "bench" / "p4" / "router6.p4", False).python_source


def test_cyclic_parser_keeps_the_loop() -> None:
    # fabric.p4 loops over SRH segments: its parser cannot be straight-line
    src = compiled(ROOT / "p4src" / "fabric.p4", True).python_source
    assert "while state is not None" in src


def test_whole_parameter_assignment_is_never_pasted() -> None:
    # pasted, ``p_hdr = st.hdr = ...`` would rebind the caller's p_hdr too
    assert tables.pasteable(["        p_hdr = st.hdr", "        p_hdr.eth.dst = 1"])
    assert not tables.pasteable(["        p_hdr = st.hdr = _t1.copy()"])
    assert not tables.pasteable(["        return"])


def test_table_apply_statements_are_pasted() -> None:
    src = compiled(ROOT / "bench" / "p4" / "router6.p4", True).python_source
    body = src[src.index("    def c_REgress"):]
    body = body[:body.index("\n\n")]
    assert "T_REgress_port_mac(st," in body and "t_REgress_port_mac(st, L)" not in body
