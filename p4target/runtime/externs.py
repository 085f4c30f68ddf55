"""v1model's stateful externs: counter, direct_counter, register, meter, direct_meter.

The generated code calls these with the packet state first (v1model method names);
the control plane reads and writes them through ``Switch``. Out-of-range indexes
behave as on BMv2: counting and writing do nothing, reading gives 0. Meters are
BMv2's two-rate three-colour marker (RFC 2698, colour-blind): the peak bucket is
checked first (short: RED), then the committed bucket (short: YELLOW), else GREEN;
buckets start full; an unconfigured meter marks everything GREEN.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

from p4target.errors import EntryError
from p4target.model import Extern

log = logging.getLogger(__name__)

GREEN, YELLOW, RED = 0, 1, 2


class Counter:
    """An indexed ``counter``: packets and bytes per cell, whatever the unit."""

    def __init__(self, ext: Extern) -> None:
        self.name = ext.name
        self.size = ext.size
        self.unit = ext.unit
        self.packets = [0] * ext.size
        self.bytes = [0] * ext.size

    def count(self, st, index: int) -> None:
        if 0 <= index < self.size:
            self.packets[index] += 1
            self.bytes[index] += st.sm.packet_length

    def _check(self, index: int) -> None:
        if not isinstance(index, int) or not 0 <= index < self.size:
            raise EntryError(
                "out_of_range", f"counter {self.name}: index {index!r} outside 0..{self.size - 1}"
            )

    def read(self, index: int) -> tuple[int, int]:
        self._check(index)
        return self.packets[index], self.bytes[index]

    def write(self, index: int, packets: int, nbytes: int) -> None:
        self._check(index)
        if packets < 0 or nbytes < 0:
            raise EntryError("invalid", f"counter {self.name}: counts cannot be negative")
        self.packets[index] = packets
        self.bytes[index] = nbytes

    def reset(self) -> None:
        # in place: the fast path (p4target/compiler/fast_externs.py) holds the two lists
        self.packets[:] = [0] * self.size
        self.bytes[:] = [0] * self.size


class DirectCounter:
    """A ``direct_counter``: the owning table counts each hit on the entry itself.

    ``count()`` in an action is accepted and does nothing more, as on BMv2.
    """

    def __init__(self, ext: Extern) -> None:
        self.name = ext.name
        self.unit = ext.unit
        self.tables = ext.tables

    def count(self, st) -> None:
        return None


class Register:
    """A ``register<bit<W>>`` array; values are truncated to W bits when written."""

    def __init__(self, ext: Extern) -> None:
        self.name = ext.name
        self.size = ext.size
        self.bitwidth = ext.bitwidth
        self._mask = (1 << ext.bitwidth) - 1
        self.cells = [0] * ext.size

    def read(self, st, index: int) -> int:
        if 0 <= index < self.size:
            return self.cells[index]
        return 0

    def write(self, st, index: int, value: int) -> None:
        if 0 <= index < self.size:
            self.cells[index] = value & self._mask

    def _check(self, index: int) -> None:
        if not isinstance(index, int) or not 0 <= index < self.size:
            raise EntryError(
                "out_of_range", f"register {self.name}: index {index!r} outside 0..{self.size - 1}"
            )

    def cp_read(self, index: int) -> int:
        self._check(index)
        return self.cells[index]

    def cp_write(self, index: int, value: int) -> None:
        self._check(index)
        if not isinstance(value, int) or value < 0 or value > self._mask:
            raise EntryError(
                "invalid", f"register {self.name}: value {value!r} does not fit bit<{self.bitwidth}>"
            )
        self.cells[index] = value

    def reset(self) -> None:
        self.cells[:] = [0] * self.size  # in place: the fast path holds the list


class MeterState:
    """One trTCM instance. Rates are kept per microsecond, as BMv2 keeps them."""

    __slots__ = ("cir", "cburst", "pir", "pburst", "_rates")

    def __init__(self, cir: float, cburst: int, pir: float, pburst: int) -> None:
        self.cir, self.cburst, self.pir, self.pburst = cir, cburst, pir, pburst
        # [rate per us, burst, tokens, tokens_last, colour when short]; peak first.
        self._rates: list[list[Any]] = [
            [pir / 1e6, pburst, pburst, None, RED],
            [cir / 1e6, cburst, cburst, None, YELLOW],
        ]

    def execute(self, units: int, now_us: int) -> int:
        for rate in self._rates:
            since = int(now_us * rate[0])
            if rate[3] is not None and since > rate[3]:
                rate[2] = min(rate[2] + since - rate[3], rate[1])
            rate[3] = since
            if rate[2] < units:
                return rate[4]
            rate[2] -= units
        return GREEN

    @property
    def config(self) -> tuple[float, int, float, int]:
        return (self.cir, self.cburst, self.pir, self.pburst)


def check_meter_config(where: str, cir: float, cburst: int, pir: float, pburst: int) -> None:
    for label, value in (("cir", cir), ("cburst", cburst), ("pir", pir), ("pburst", pburst)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise EntryError("invalid", f"{where}: {label} must be a non-negative number, got {value!r}")
    if pir < cir:
        raise EntryError("invalid", f"{where}: pir ({pir}) must be at least cir ({cir}), as in RFC 2698")


class Meter:
    """An indexed ``meter``; ``execute_meter`` returns 0 GREEN, 1 YELLOW, 2 RED."""

    def __init__(self, ext: Extern, clock_us: Callable[[], int]) -> None:
        self.name = ext.name
        self.size = ext.size
        self.unit = ext.unit
        self._clock_us = clock_us
        self._packets = ext.unit == "packets"
        self.states: dict[int, MeterState] = {}

    def execute_meter(self, st, index: int) -> int:
        state = self.states.get(index)
        if state is None:
            return GREEN
        units = 1 if self._packets else st.sm.packet_length
        return state.execute(units, self._clock_us())

    def _check(self, index: int) -> None:
        if not isinstance(index, int) or not 0 <= index < self.size:
            raise EntryError(
                "out_of_range", f"meter {self.name}: index {index!r} outside 0..{self.size - 1}"
            )

    def set(self, index: int, cir: float, cburst: int, pir: float, pburst: int) -> None:
        self._check(index)
        check_meter_config(f"meter {self.name}[{index}]", cir, cburst, pir, pburst)
        self.states[index] = MeterState(cir, cburst, pir, pburst)

    def clear(self, index: int) -> None:
        self._check(index)
        self.states.pop(index, None)

    def get(self, index: int) -> tuple[float, int, float, int] | None:
        self._check(index)
        state = self.states.get(index)
        return state.config if state else None


class DirectMeter:
    """A ``direct_meter``: the table executes the entry's meter on a hit.

    ``read(st)`` then gives the colour of that execution for the same packet, and
    GREEN when the packet's last table application did not run this meter.
    """

    def __init__(self, ext: Extern, clock_us: Callable[[], int]) -> None:
        self.name = ext.name
        self.unit = ext.unit
        self.tables = ext.tables
        self.clock_us = clock_us
        self.packets = ext.unit == "packets"
        self._last_st: object = None
        self._last_color = GREEN

    def executed(self, st, color: int) -> None:
        self._last_st = st
        self._last_color = color

    def read(self, st) -> int:
        if self._last_st is st:
            return self._last_color
        return GREEN
