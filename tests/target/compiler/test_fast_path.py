"""The fused fast path (``Pipeline.fast``, p4target/compiler/fastpath.py) is invisible.

For every program of the repository, a switch whose program was compiled with
``fastgen.FAST_PATH`` on and one compiled with it off see the same frames (random and
crafted ones, on random ports, with random table entries installed and every default
action tried) and must give the same outputs, drops, port statistics, counters and
registers. For router6.p4 (the benchmark program) entries that route the crafted
frames are installed, and most frames must really take the fast path.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from p4target import Switch
from p4target.compiler import compile_file, fastgen
from p4target.errors import EntryError
from p4target.runtime.entries import Exact, Lpm, Optional, Range, Ternary
from test_codegen_equivalence import frames, observe, set_defaults

ROOT = Path(__file__).resolve().parents[3]
PROGRAMS = [
    *sorted((ROOT / "p4src").glob("*.p4")),
    *sorted((ROOT / "bench" / "p4").glob("*.p4")),
    *sorted((ROOT / "tests" / "p4" / "constructs").glob("*.p4")),
    *sorted((ROOT / "tests" / "target" / "runtime" / "p4").glob("*.p4")),
    *sorted((ROOT / "tests" / "p4runtime" / "p4").glob("*.p4")),
]
ROUTER6 = ROOT / "bench" / "p4" / "router6.p4"
MY_MAC = 0x020000000002
ROUTED = bytes.fromhex("fcbbbb00010000000000000000000000")
HOST = bytes.fromhex("fcbbbb000100000000000000000000aa")


def compiled(path: Path, fast: bool):
    saved = fastgen.FAST_PATH
    fastgen.FAST_PATH = fast
    try:
        return compile_file(path)
    finally:
        fastgen.FAST_PATH = saved


def key_value(kind: str, width: int, rng: random.Random):
    v = rng.getrandbits(width) if rng.random() < 0.5 else rng.randrange(0, min(8, 1 << width))
    if kind == "exact":
        return Exact(v)
    if kind == "lpm":
        return Lpm(v, rng.randrange(0, width + 1))
    if kind == "ternary":
        return Ternary(v, rng.getrandbits(width))
    if kind == "range":
        a, b = sorted((v, rng.getrandbits(width)))
        return Range(a, b)
    if kind == "optional":
        return Optional(v)
    return None


def random_entries(sw: Switch, rng: random.Random, n: int = 6) -> None:
    for t in sw.model.tables:
        if t.const_entries is not None or t.implementation is not None:
            continue
        refs = [r for r in t.actions if r.scope != "default_only"]
        if not refs:
            continue
        for _ in range(n):
            match = {}
            for k in t.match_keys:
                v = key_value(k.match_kind, k.bitwidth, rng)
                if v is None:
                    break
                match[k.name] = v
            else:
                ref = rng.choice(refs)
                act = sw.model.action(ref.name)
                params = {p.name: rng.getrandbits(p.bitwidth) if rng.random() < 0.5
                          else rng.randrange(0, 4) for p in act.params}
                prio = rng.randrange(1, 100) if any(
                    k.match_kind in ("ternary", "range", "optional") for k in t.match_keys) else None
                try:
                    sw.table_add(t.name, match, ref.name, params, prio)
                except EntryError:
                    pass


def router6_entries(sw: Switch) -> None:
    for port in range(8):
        sw.table_add("RIngress.my_mac", {"sm.ingress_port": Exact(port), "hdr.eth.dst": Exact(MY_MAC)},
                     "RIngress.accept_frame")
        sw.table_add("REgress.port_mac", {"sm.egress_port": Exact(port)}, "REgress.set_src",
                     {"mac": 0x020000000A00 + port})
    sw.table_add("RIngress.routes", {"hdr.ipv6.dst_addr": Lpm(int.from_bytes(ROUTED, "big"), 48)},
                 "RIngress.route", {"port": 2, "next_mac": 0x020000000B02})
    sw.table_add("RIngress.routes", {"hdr.ipv6.dst_addr": Lpm(0x2001 << 112, 16)},
                 "RIngress.route", {"port": 511, "next_mac": 1})
    sw.table_add("RIngress.host_routes", {"hdr.ipv6.dst_addr": Exact(int.from_bytes(HOST, "big"))},
                 "RIngress.route", {"port": 3, "next_mac": 0x020000000B03})
    for i in range(1000):
        sw.table_add("RIngress.routes", {"hdr.ipv6.dst_addr": Lpm((0x20010DB8 << 96) | (i << 64), 64)},
                     "RIngress.route", {"port": 1 + i % 6, "next_mac": i})


def routed_frames(rng: random.Random) -> list[bytes]:
    out = []
    for _ in range(150):
        dst = rng.choice([ROUTED, HOST, ((0x20010DB8 << 96) | (rng.randrange(1200) << 64)).to_bytes(16, "big"),
                          rng.randbytes(16)])
        hop = rng.choice([0, 1, 2, 64, 255])
        nh = rng.choice([17, 17, 17, 6])
        f = (MY_MAC.to_bytes(6, "big") + rng.randbytes(6) + b"\x86\xdd"
             + bytes([0x60, 0, 0, 0]) + rng.randbytes(2) + bytes([nh, hop]) + rng.randbytes(16) + dst
             + rng.randbytes(rng.randrange(0, 60)))
        out.append(f)
        if rng.random() < 0.1:
            out.append(f[:rng.randrange(0, len(f))])
    return out


def run(program, seed: int, path: Path) -> tuple[list, int, int]:
    rng = random.Random(seed)
    sw = Switch(program, seed=7)
    results: list = []
    sent = 0
    if path == ROUTER6:
        router6_entries(sw)
    for rnd in range(3):
        random_entries(sw, rng)
        if rnd:
            set_defaults(sw, rng)
        batch = frames(rng) + (routed_frames(rng) if path == ROUTER6 else [])
        rng.shuffle(batch)
        for f in batch:
            port = rng.randrange(0, 8)
            if rng.random() < 0.03:
                sw.set_port_status(rng.randrange(0, 8), rng.random() < 0.7)
            results.append(sw.inject(port, f))
            sent += 1
        results.append(observe(sw))
    results.append(sw.digests())
    return results, sw.fast_packets, sent


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: str(p.relative_to(ROOT)))
def test_fast_path_is_invisible(path: Path) -> None:
    fast = compiled(path, True)
    plain = compiled(path, False)
    assert "def _fast(" not in plain.python_source
    for seed in (1, 2):
        got, taken, _ = run(fast, seed, path)
        want, none, _ = run(plain, seed, path)
        assert none == 0
        assert got == want


def test_router6_takes_the_fast_path() -> None:
    fast = compiled(ROUTER6, True)
    assert "def _fast(" in fast.python_source
    assert "def _fast(" not in compiled(ROUTER6, False).python_source
    rng = random.Random(5)
    sw = Switch(fast, seed=7)
    router6_entries(sw)
    batch = routed_frames(rng)
    outs = [sw.inject(1, f) for f in batch]
    assert sw.fast_packets > 0.6 * len(batch)
    assert any(outs)


def test_general_path_is_taken_when_a_port_is_rate_limited() -> None:
    sw = Switch(compiled(ROUTER6, True), seed=7)
    router6_entries(sw)
    f = routed_frames(random.Random(3))[0]
    sw.inject(1, f)
    before = sw.fast_packets
    sw.set_queue_rate(2, 1e6)
    sw.inject(1, f)
    assert sw.fast_packets == before
