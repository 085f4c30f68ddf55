"""The embedded target's public API: what the rest of the project may use of it.

Why one module: the controller, the Mininet package and the tools build on the
target without reaching into its internals (compiler, runtime, P4Runtime server),
so those can change shape freely; what the rest needs is named here, and the
import-direction test (tests/test_layers.py) holds everyone else to it.

Everything is imported where it is used, so importing this module stays cheap.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from p4target.p4runtime.bytestrings import encode as canonical_bytes  # the shortest big-endian form (P4Runtime 8.4)
from p4target.p4runtime.wire import varint

if TYPE_CHECKING:  # pragma: no cover
    from finsy.proto.p4.config.v1 import p4info_pb2

    from p4target.runtime.switch import Switch


def p4info_of(path: str | Path) -> "p4info_pb2.P4Info":
    """The P4Info of the v1model program at ``path`` (compiled by the embedded target)."""
    from p4target.compiler import compile_file
    from p4target.p4info import build_p4info

    return build_p4info(compile_file(path).model)


def device_config(path: str | Path) -> bytes:
    """The embedded target's ``p4_device_config`` for the program at ``path``."""
    from p4target.device_config import device_config_from_file

    return device_config_from_file(path)


def bmv2_device_config(bmv2_json: str | bytes | Path) -> bytes:
    """The ``p4_device_config`` for real BMv2: the JSON ``p4c-bm2-ss`` wrote, checked."""
    from p4target.device_config import bmv2_device_config as config

    return config(bmv2_json)


def allowed_cpus() -> list[int]:
    """The CPUs the calling process may run on, in order (as the switch's ``--cpu`` sees them)."""
    from p4target.p4runtime.placement import allowed_cpus as cpus

    return cpus()


def exact(value: int) -> Any:
    """An exact match value for a table of an in-process ``Switch``."""
    from p4target.runtime.entries import Exact

    return Exact(value)


def lpm(value: int, prefix_len: int) -> Any:
    """A longest-prefix match value for a table of an in-process ``Switch``."""
    from p4target.runtime.entries import Lpm

    return Lpm(value, prefix_len)


def ternary(value: int, mask: int) -> Any:
    """A ternary match value for a table of an in-process ``Switch``."""
    from p4target.runtime.entries import Ternary

    return Ternary(value, mask)


def group(group_id: int) -> Any:
    """The action of an entry of a table with an action selector: group ``group_id``."""
    from p4target.runtime.entries import Group

    return Group(group_id)


__all__ = ["Switch", "allowed_cpus", "bmv2_device_config", "canonical_bytes", "device_config", "exact", "group",
           "lpm", "p4info_of", "ternary", "varint"]


def __getattr__(name: str) -> Any:
    if name == "Switch":  # lazy: the runtime is the heavy part
        from p4target.runtime.switch import Switch

        return Switch
    raise AttributeError(f"module 'p4target.api' has no attribute {name!r}")
