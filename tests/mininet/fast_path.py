"""Which fast path a Mininet fabric's embedded switches run, read from their logs.

Why: a switch that lost its compiled fast path (no C compiler, a failed build, a
cache the switches cannot read) still forwards every frame, only slower, so the
end-to-end tests pass either way; this check makes them say which one ran.

Each ``p4target run`` logs every pipeline it loads with the fast path its frames take
from then on (``pipeline loaded from SOURCE (fast path: native|python|none)``, see
docs/target.md); when the compiled one was not in the cache yet it is built in the
background and the switch logs ``compiled fast path bound`` once frames take it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

LOADED = re.compile(r": pipeline loaded from .* \(fast path: (?P<kind>\w+)\)$")
BOUND = ": compiled fast path bound"


def fast_path_in_log(log: Path) -> str:
    """The fast path of the last pipeline the switch logged loading ("no pipeline
    loaded" when it logged none)."""
    kind = "no pipeline loaded"
    for line in log.read_text(errors="replace").splitlines():
        m = LOADED.search(line)
        if m:
            kind = m["kind"]
        elif kind == "python" and line.endswith(BOUND):
            kind = "native"
    return kind


def assert_compiled_fast_path(fn: Any) -> None:
    """Every embedded switch of the running network ``fn`` (a FabricNetwork) runs the
    compiled fast path."""
    kinds = {sw.name: fast_path_in_log(sw.log_path) for sw in fn.p4_switches() if sw.target == "embedded"}
    assert kinds, "the network has no embedded switch"
    wrong = {name: kind for name, kind in kinds.items() if kind != "native"}
    assert not wrong, (f"{len(wrong)} of {len(kinds)} switches do not run the compiled fast path: {wrong} "
                       "(`make native` builds it; P4TARGET_NATIVE=0 turns it off)")
