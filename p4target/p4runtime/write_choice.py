"""Which ``apply_update`` the P4Runtime server's writes go through, chosen once when a
server is made: the compiled write path of ``p4target/accel/`` when it is there and
built from the current ``write.py``, else ``write.apply_update``. Both give the same
answers; the choice changes speed only (docs/p4runtime.md, "Transports and figures").
"""

from __future__ import annotations

from typing import Any, Callable

from p4target import optional_accel
from p4target.p4runtime import write

ApplyUpdate = Callable[..., Any]


def choose_apply_update(compiled: bool | None = None) -> tuple[ApplyUpdate, str]:
    """``(apply_update, kind)``: kind is ``"compiled"`` or ``"python"``. ``compiled``:
    None takes the compiled one when it is built unless ``P4TARGET_NATIVE=0``; False
    never takes it; True takes it whenever it is built (the switch not consulted)."""
    write_path = optional_accel.part("write_path") if compiled is not False else None
    fast = write_path.compiled_apply_update(asked=compiled is True) if write_path is not None else None
    if fast is None:
        return write.apply_update, "python"
    return fast, "compiled"
