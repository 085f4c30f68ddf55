"""The fused fast path's entry point: ``FAST_PATH`` (the switch ``compile_file``
reads; the tests compile every program with it on and off), ``build_fast`` and its
result ``FastSource``.

The generator itself (``fast_compiler.FastCompiler``, docs/target-internals.md,
"The fast path") is imported by the first ``build_fast``, when a switch forwards
its first frame: a process that loads programs and writes tables but never forwards
(the control-plane and memory benchmarks, the P4Runtime tests) never loads it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from p4target.frontend import ast as A

log = logging.getLogger(__name__)

FAST_PATH = True


@dataclass(frozen=True)
class FastSource:
    """The fast path of one program: the source of ``make_fast(rt)`` (run in the
    generated module's namespace, it binds the runtime like ``build(rt)`` does and
    returns ``_fast``) and whether ``_fast`` reads the clock."""
    text: str
    uses_clock: bool


def build_fast(program: A.Program, source: Path) -> FastSource | None:
    """The program's fast path, or None when it has none (``NoFast``, or anything
    else going wrong: the general path is always there)."""
    from p4target.compiler.fast_compiler import FastCompiler, NoFast
    from p4target.compiler.fast_prune import prune_for_fast

    try:
        fc = FastCompiler(prune_for_fast(program), source)
        text, _model, _errors = fc.compile()
    except NoFast as e:
        log.debug("%s: no fast path (%s)", source, e)
        return None
    except Exception as e:  # noqa: BLE001 - the general compile reports real errors
        log.debug("%s: no fast path (%s: %s)", source, type(e).__name__, e)
        return None
    lines = ["def make_fast(rt):", "    rt_hash = rt.hash", "    rt_checksum = rt.checksum"]
    lines += ["    " + b for b in fc.bind_lines + fc.binds]
    lines += ["    " + x for x in text.split("\n")]
    lines += ["    return _fast", ""]
    return FastSource("\n".join(lines), fc.uses_clock)
