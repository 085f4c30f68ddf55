"""The generated code's speed-ups change nothing a packet can observe.

The straight-line parser (an acyclic parser inlined into ``Pipeline.parse``) and the
comparison dispatch of small tables (empty actions skipped, short action bodies
pasted into the table helper) can be switched off
(``assembly.INLINE_PARSER``, ``tables.INLINE_DISPATCH``). They live in the general
path (the one every frame of a rate-limited or otherwise unusual port takes), so
both builds are compiled with the fused fast path off (``fastgen.FAST_PATH``) and
the test checks that no frame took it. For every program of the repository, random
and crafted frames through a switch built each way give the same outputs, drops,
port statistics, counters and registers, with random table entries installed (key
values drawn from the addresses and ports the frames carry, so that lookups hit)
and every table's default action set in turn to each of its actions (random
arguments), so the dispatch runs every action. A build whose pasted action bodies
lose their last statement must give different outputs: the comparison can see a
broken inliner.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from p4target import Switch
from p4target.compiler import assembly, compile_file, fastgen, tables
from p4target.errors import EntryError
from p4target.model import KeyField
from p4target.runtime.entries import Exact, Lpm, Optional, Range, Ternary
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


def compiled(path: Path, inline: bool, broken_paste: bool = False):
    """``path`` compiled with the inlining on or off, the fused fast path off.
    ``broken_paste``: the dispatch pastes each action body without its last line."""
    saved = assembly.INLINE_PARSER, tables.INLINE_DISPATCH, fastgen.FAST_PATH, tables.inline_body
    assembly.INLINE_PARSER = tables.INLINE_DISPATCH = inline
    fastgen.FAST_PATH = False
    if broken_paste:
        whole = tables.inline_body
        tables.inline_body = lambda a: (body[:-1] or None) if (body := whole(a)) else body
    try:
        return compile_file(path)
    finally:
        assembly.INLINE_PARSER, tables.INLINE_DISPATCH, fastgen.FAST_PATH, tables.inline_body = saved


# Values the frames carry and the entries match on: the fabric's SRv6 locator, a few
# addresses around it, random ones; MAC addresses.
SRV6 = bytes.fromhex("fcbbbb00010000000000000000000000")


def pools(rng: random.Random) -> dict[int, list[int]]:
    """Key values by width: 128-bit addresses, 48-bit MACs (the frames use the same)."""
    addrs = [SRV6, bytes.fromhex("fcbbbb00020003000000000000000000"), bytes.fromhex("fcbbbb01000200030000000000000000"),
             rng.randbytes(16), rng.randbytes(16)]
    return {128: [int.from_bytes(a, "big") for a in addrs],
            48: [int.from_bytes(rng.randbytes(6), "big") for _ in range(3)]}


def eth(etype: int, rng: random.Random) -> bytes:
    return rng.randbytes(12) + etype.to_bytes(2, "big")


def ipv6(nh: int, rng: random.Random, dst: bytes | None = None, payload_len: int | None = None) -> bytes:
    """An IPv6 header; ``payload_len`` None: a random one (mostly wrong)."""
    plen = payload_len.to_bytes(2, "big") if payload_len is not None else rng.randbytes(2)
    return (bytes([0x60, rng.choice([0, 0x0A, 0xB8, 0xFF]), 0, 0]) + plen + bytes([nh, rng.choice([0, 1, 2, 64, 255])])
            + rng.randbytes(16) + (dst if dst is not None else rng.randbytes(16)))


def ipv4(proto: int, rng: random.Random) -> bytes:
    return bytes([0x45, 0]) + rng.randbytes(7) + bytes([proto]) + rng.randbytes(10)


def frames(rng: random.Random, pool: dict[int, list[int]] | None = None) -> list[bytes]:
    """Random and crafted frames; their addresses from ``pool`` (default: a new one)."""
    pool = pools(rng) if pool is None else pool
    out: list[bytes] = [b"", bytes(13), bytes(14)]
    for _ in range(60):
        out.append(rng.randbytes(rng.randrange(0, 160)))
    addrs = [a.to_bytes(16, "big") for a in pool[128]]
    macs = [m.to_bytes(6, "big") for m in pool[48]]
    for _ in range(6):
        for nh in (17, 6, 58, 43, 41, 4, 0, 59):
            tail = rng.randbytes(rng.randrange(0, 120))
            if nh == 43:  # a segment routing header: type 4, a few segments
                segs = rng.randrange(0, 4)
                tail = (bytes([17, 2 * segs, 4, segs, max(segs - 1, 0), 0, 0, 0])
                        + b"".join(rng.choice(addrs) for _ in range(segs)) + tail)
            dst = rng.choice(addrs) if rng.random() < 0.7 else None
            f = eth(0x86DD, rng) + ipv6(nh, rng, dst, len(tail) if rng.random() < 0.8 else None) + tail
            if rng.random() < 0.5:
                f = rng.choice(macs) + f[6:]
            out.append(f)
            out.append(f[:rng.randrange(0, len(f) + 1)])
        for proto in (17, 6, 1):
            out.append(eth(0x0800, rng) + ipv4(proto, rng) + rng.randbytes(rng.randrange(0, 64)))
        for etype in (0x8100, 0x0806, 0x88CC, 0x1234, 0x9000):
            out.append(eth(etype, rng) + rng.randbytes(rng.randrange(0, 80)))
    return out


def key_value(k: KeyField, rng: random.Random, pool: dict[int, list[int]]) -> int:
    """A value of key field ``k`` that frames are likely to carry."""
    if k.bitwidth in pool and rng.random() < 0.8:
        return rng.choice(pool[k.bitwidth])
    if k.bitwidth <= 16 and rng.random() < 0.8:
        return rng.randrange(0, min(8, 1 << k.bitwidth))  # ports, planes, small codes
    return rng.getrandbits(k.bitwidth)


def key_match(k: KeyField, rng: random.Random, pool: dict[int, list[int]]) -> object:
    w, v = k.bitwidth, key_value(k, rng, pool)
    full = (1 << w) - 1
    if k.match_kind == "exact":
        return Exact(v)
    if k.match_kind == "lpm":
        plen = min(w, rng.choice([0, 1, 8, 16, 32, 48, 64, w, rng.randrange(0, w + 1)]))
        return Lpm(v & (full ^ ((1 << (w - plen)) - 1)), plen)
    if k.match_kind == "ternary":
        mask = full if rng.random() < 0.3 else rng.getrandbits(w) & rng.getrandbits(w) & rng.getrandbits(w)
        return Ternary(v & mask, mask)
    if k.match_kind == "range":
        low, high = sorted((v, rng.getrandbits(w)))
        return Range(low, high)
    if k.match_kind == "optional":
        return Optional(v)
    raise AssertionError(f"no random match for {k.match_kind}")


def add_entries(sw: Switch, rng: random.Random, pool: dict[int, list[int]]) -> int:
    """Random entries in every table that takes them (action profiles aside); how many."""
    added = 0
    for t in sw.model.tables:
        refs = [r for r in t.actions if r.scope != "default_only"]
        if not t.keys or t.const_entries is not None or t.implementation or not refs:
            continue
        for _ in range(min(t.size, 12)):
            ref = rng.choice(refs)
            act = sw.model.action(ref.name)
            params = {p.name: rng.getrandbits(p.bitwidth) if rng.random() < 0.3 else rng.randrange(0, min(8, 1 << p.bitwidth))
                      for p in act.params}
            match = {k.name: key_match(k, rng, pool) for k in t.keys}
            prio = rng.randrange(1, 100) if any(k.match_kind in ("ternary", "range", "optional") for k in t.keys) else None
            try:
                sw.table_add(t.name, match, ref.name, params, priority=prio)
                added += 1
            except EntryError:
                pass  # a duplicate match
    return added


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


def run(program, seed: int, entries: bool = True) -> list:
    rng = random.Random(seed)
    pool = pools(rng)
    sw = Switch(program, seed=7)
    if entries:
        assert add_entries(sw, rng, pool) > 0 or not any(t.keys for t in sw.model.tables)
    results = []
    for _ in range(4):
        set_defaults(sw, rng)
        for f in frames(rng, pool):
            port = rng.randrange(0, 8)
            results.append(sw.inject(port, f))
        results.append(observe(sw))
    results.append(sw.digests())
    # the general path ran every frame: the inlining under test is all there was
    assert (sw.fast_packets, sw.fast_kind) == (0, "none")
    return results


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: str(p.relative_to(ROOT)))
def test_fast_codegen_is_invisible(path: Path) -> None:
    inlined = compiled(path, True)
    plain = compiled(path, False)
    for seed in (1, 2):
        assert run(inlined, seed) == run(plain, seed)


# programs whose tables the random entries must reach: what comes out changes with them
HIT_PROGRAMS = [ROOT / "p4src" / "fabric.p4", ROOT / "p4src" / "nic.p4", ROOT / "bench" / "p4" / "router6.p4"]


@pytest.mark.parametrize("path", HIT_PROGRAMS, ids=lambda p: p.name)
def test_random_entries_are_hit(path: Path) -> None:
    program = compiled(path, True)
    assert run(program, 1) != run(program, 1, entries=False)


def test_a_broken_paste_is_seen() -> None:
    fabric = ROOT / "p4src" / "fabric.p4"
    broken = compiled(fabric, True, broken_paste=True)
    assert broken.python_source != compiled(fabric, True).python_source
    assert run(broken, 1) != run(compiled(fabric, False), 1)


def mrc_run(nic_program, fabric_program) -> tuple[list, list, dict, dict]:
    """The controller's entries for one NIC and its plane-0 leaf (the NIC dataplane
    tests' fabric), MRC and plain UDP frames from the host through the NIC, and what
    the NIC sent on plane 0 through the leaf: (NIC outputs, leaf outputs, states)."""
    from controller import local
    from fabric.entries import entries_of, nodes
    from tests.dataplane.nic.nic_case import TEST_FABRIC, nic_case
    from tests.dataplane.nic.nic_frames import mrc_frame, udp_frame

    cfg = nic_case(TEST_FABRIC, 0, 1)
    nic, leaf = Switch(nic_program, seed=7), Switch(fabric_program, seed=7)
    local.install(nic, cfg.entries())
    local.install(leaf, entries_of(TEST_FABRIC, next(n for n in nodes(TEST_FABRIC) if n.name == "p0-leaf0")))
    frames = [bytes(mrc_frame(cfg, e.dst_leaf, e.dst_port, e.ev, psn=e.ev)) for e in cfg.explicit]
    frames += [bytes(mrc_frame(cfg, 1, 2, 0xBEEF, psn=k)) for k in range(32)]  # sprayed by the NIC
    frames += [bytes(udp_frame(cfg, 2, 1, sport=20000 + k)) for k in range(32)]
    nic_out = [nic.inject(0, f) for f in frames]
    leaf_out = [leaf.inject(1, data) for out in nic_out for port, data in out if port == 1]
    for sw in (nic, leaf):
        assert (sw.fast_packets, sw.fast_kind) == (0, "none")
    return nic_out, leaf_out, observe(nic), observe(leaf)


def test_controller_entries_and_mrc_traffic_give_the_same_outputs() -> None:
    nic_p4, fabric_p4 = ROOT / "p4src" / "nic.p4", ROOT / "p4src" / "fabric.p4"
    inlined = mrc_run(compiled(nic_p4, True), compiled(fabric_p4, True))
    plain = mrc_run(compiled(nic_p4, False), compiled(fabric_p4, False))
    assert inlined == plain
    nic_out, leaf_out = inlined[0], inlined[1]
    # every frame left the NIC, a quarter of them on plane 0, and the leaf forwarded those
    assert all(len(out) == 1 for out in nic_out)
    assert len(leaf_out) >= len(nic_out) // 8 and all(len(out) == 1 for out in leaf_out)


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
