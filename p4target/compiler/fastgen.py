"""The fused fast path's entry point: ``FAST_PATH`` (the switch ``compile_file``
reads; the tests compile every program with it on and off), ``build_fast`` (what
``CompiledProgram`` calls: never fails), ``generate_fast`` (what it runs: raises
``NoFast`` or, for a generator bug, anything) and their result ``FastSource``.

The generator itself (``fast_compiler.FastCompiler``, docs/target-internals.md,
"The fast path") is imported by the first ``build_fast``, when a switch forwards
its first frame: a process that loads programs and writes tables but never forwards
(the control-plane and memory benchmarks, the P4Runtime tests) never loads it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from p4target.compiler.fast_errors import NoFast
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


def generate_fast(program: A.Program, source: Path) -> FastSource:
    """The program's fast path; raises ``NoFast`` for a construct the generator does
    not handle (the program then has only the general path). Any other exception is
    a bug of the generator (the tests run this on every program to catch them)."""
    from p4target.compiler.fast_compiler import FastCompiler
    from p4target.compiler.fast_prune import prune_for_fast

    fc = FastCompiler(prune_for_fast(program), source)
    text, _model, _errors = fc.compile()
    lines = ["def make_fast(rt):", "    rt_hash = rt.hash", "    rt_checksum = rt.checksum"]
    lines += ["    " + b for b in fc.bind_lines + fc.binds]
    lines += ["    " + x for x in text.split("\n")]
    lines += ["    return _fast", ""]
    return FastSource("\n".join(lines), fc.uses_clock)


def build_fast(program: A.Program, source: Path) -> FastSource | None:
    """The program's fast path, or None when it has none: on ``NoFast`` (logged at
    debug level: a construct left to the general path), and on any other exception,
    a generator bug, logged as a warning with its traceback so that it is seen and
    reported, but never in the way of running the program (the general path is
    always there)."""
    try:
        return generate_fast(program, source)
    except NoFast as e:
        log.debug("%s: no fast path (%s)", source, e)
    except Exception as e:  # a generator bug must not stop the program
        log.warning("%s: no fast path: the fast-path generator failed (%s: %s); every frame takes the "
                    "general path; please report this with the program", source, type(e).__name__, e,
                    exc_info=True)
    return None
