"""Inputs of the fast path's differential test (test_fast_path.py): the frames and
table entries both switches see, made from one seed so that the fast switch and
the general one get exactly the same sequence.

Entries: each program's own (router6.p4's routes here, the MRC programs' from
mrc_traffic.py), random entries for every table a control plane can write, and
``churn`` (deletes, clears, counter and register writes) after the fast path is
bound. Frames: each program's crafted ones, random ones (test_codegen_equivalence's
``frames``), and mutations of both.
"""

from __future__ import annotations

import random

from mrc_traffic import fabric_entries, fabric_frames, nic_entries, nic_frames
from p4target import Switch
from p4target.errors import EntryError
from p4target.runtime.entries import Exact, Lpm, Optional, Range, Ternary
from test_codegen_equivalence import frames

STORAGE = "tests/target/compiler/p4/fast_storage.p4"
ROUTER6 = "bench/p4/router6.p4"
VALUE_SETS = "tests/target/language/p4/value_sets.p4"
MY_MAC = 0x020000000002
ROUTED = bytes.fromhex("fcbbbb00010000000000000000000000")
HOST = bytes.fromhex("fcbbbb000100000000000000000000aa")


# ---- entries ----------------------------------------------------------------------
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


def churn(sw: Switch, rng: random.Random) -> None:
    """Control-plane writes after the fast path is bound (it holds the tables' lookup
    structures and the counters' cells): delete some entries (a prefix length may
    go), clear a table now and then, reset or write a counter or a register."""
    for t in sw.model.tables:
        if t.const_entries is not None or t.implementation is not None:
            continue
        entries = sw.table_entries(t.name)
        if entries and rng.random() < 0.1:
            sw.table_clear(t.name)
            continue
        for e in entries:
            if rng.random() < 0.3:
                sw.table_delete(t.name, e.match, e.priority)
    for x in sw.model.externs:
        if x.kind == "counter":
            if rng.random() < 0.5:
                sw.counter_reset(x.name)
            else:
                sw.counter_write(x.name, rng.randrange(x.size), rng.randrange(9), rng.randrange(999))
        if x.kind == "register":
            if rng.random() < 0.5:
                sw.register_reset(x.name)
            else:
                sw.register_write(x.name, rng.randrange(x.size), rng.getrandbits(x.bitwidth))


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
    for i in range(100):
        sw.table_add("RIngress.routes", {"hdr.ipv6.dst_addr": Lpm((0x20010DB8 << 96) | (i << 64), 64)},
                     "RIngress.route", {"port": 1 + i % 6, "next_mac": i})


def router6_frames(rng: random.Random) -> list[bytes]:
    dst = rng.choice([ROUTED, HOST, ((0x20010DB8 << 96) | (rng.randrange(120) << 64)).to_bytes(16, "big"),
                      rng.randbytes(16)])
    return [MY_MAC.to_bytes(6, "big") + rng.randbytes(6) + b"\x86\xdd"
            + bytes([0x60, 0, 0, 0]) + rng.randbytes(2) + bytes([rng.choice([17, 17, 6]), rng.choice([0, 1, 64])])
            + rng.randbytes(16) + dst + rng.randbytes(rng.randrange(0, 60))]


def own_entries(rel: str, sw: Switch, rng: random.Random) -> None:
    if rel == ROUTER6:
        router6_entries(sw)
    elif rel == "p4src/fabric.p4":
        fabric_entries(sw)
    elif rel == "p4src/nic.p4":
        nic_entries(sw, rng)
    elif rel == VALUE_SETS:
        sw.value_set_set("MyParser.tagged", [[Exact(0x1234)], [Exact(rng.getrandbits(16))]])
        sw.value_set_set("MyParser.special", [[Ternary(0x8800, 0xff00), Range(10, 200)]])


def own_frames(rel: str, rng: random.Random) -> list[bytes]:
    if rel == ROUTER6:
        return router6_frames(rng)
    if rel == "p4src/fabric.p4":
        return fabric_frames(rng)
    if rel == "p4src/nic.p4":
        return nic_frames(rng)
    if rel == VALUE_SETS:  # ether types the value sets hold or nearly, and any
        etype = rng.choice([0x1234, 0x1235, 0x88ab, 0x8800, 0x89ab, rng.getrandbits(16)])
        return [rng.randbytes(12) + etype.to_bytes(2, "big") + rng.randbytes(rng.randrange(0, 4))]
    if rel == STORAGE:
        tags = b"".join(bytes([rng.randrange(1, 4), 4]) + rng.randbytes(2) for _ in range(rng.randrange(0, 6)))
        etype = rng.choice([0x88B5, 0x88B5, 0x88B6, 0x0800, 0])
        return [rng.randbytes(12) + etype.to_bytes(2, "big") + tags + bytes(rng.randrange(0, 3))
                + rng.randbytes(rng.randrange(0, 20))]
    return []


# ---- frames -------------------------------------------------------------------------
_INTERESTING = (0, 1, 0xFF, 4, 6, 17, 41, 43, 58, 0x60, 0x86, 0xDD, 0x12, 0xB7, 135, 136)


def mutate(f: bytes, other: bytes, rng: random.Random) -> bytes:
    b = bytearray(f)
    op = rng.randrange(6)
    if op == 0 and b:
        for _ in range(rng.randrange(1, 4)):
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
    elif op == 1:
        del b[rng.randrange(len(b) + 1):]
    elif op == 2:
        b += rng.randbytes(rng.randrange(1, 48))
    elif op == 3 and b:
        b[rng.randrange(min(len(b), 96))] = rng.choice(_INTERESTING)
    elif op == 4:
        cut = rng.randrange(len(b) + 1)
        b = b[:cut] + other[rng.randrange(len(other) + 1):]
    elif b:
        i = rng.randrange(len(b))
        b[i:i + 2] = rng.randbytes(2)
    return bytes(b)


def frame_stream(rel: str, rng: random.Random, n: int) -> list[bytes]:
    """``n`` frames: the program's crafted ones (a pool of 30 rounds: scapy is slow),
    random ones, and mutations of both."""
    pool = frames(rng)
    own = [f for _ in range(30) for f in own_frames(rel, rng)] or pool
    out = []
    while len(out) < n:
        f = rng.choice(own)
        r = rng.random()
        out.append(f if r < 0.45 else mutate(f, rng.choice(pool + own), rng) if r < 0.9
                   else rng.choice(pool))
    return out
