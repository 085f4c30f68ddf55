"""Mutated P4 sources (tokens deleted, duplicated, replaced) never crash the compiler:
each either compiles or is refused with one P4Error naming a place, never an internal
error or a Python traceback."""

from __future__ import annotations

import random
import re
import shutil

from p4target.compiler import compile_file
from p4target.errors import P4Error

TOKENS = re.compile(r"\w+|[^\w\s]|\s+")
LOCATED = re.compile(r"^\S+:\d+:\d+: error: ")


def test_mutated_programs_are_compiled_or_refused_cleanly(construct, tmp_path) -> None:
    shutil.copytree(construct("inc"), tmp_path / "inc")
    sources = [construct(n).read_text() for n in
               ("basic_l3.p4", "arith.p4", "parser_features.p4", "tables_externs.p4", "checksum.p4")]
    rng = random.Random(42)
    outcomes = {"ok": 0, "refused": 0}
    for i in range(250):
        toks = TOKENS.findall(rng.choice(sources))
        for _ in range(rng.randrange(1, 4)):
            j = rng.randrange(len(toks))
            r = rng.random()
            if r < 0.4:
                del toks[j]
            elif r < 0.7:
                toks.insert(j, rng.choice(toks))
            else:
                toks[j] = rng.choice(toks)
        path = tmp_path / f"m{i}.p4"
        path.write_text("".join(toks))
        try:
            compile_file(path)
            outcomes["ok"] += 1
        except P4Error as e:
            msg = str(e)
            assert "internal error" not in msg, msg
            assert LOCATED.match(msg), msg
            outcomes["refused"] += 1
    assert outcomes["refused"] > 100 and outcomes["ok"] > 10, outcomes
