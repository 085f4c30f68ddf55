"""Embedded P4_16 v1model target: runs the project's .p4 files without BMv2."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from p4target.runtime.switch import Switch

__all__ = ["Switch"]


def __getattr__(name: str) -> Any:
    # Lazy, so importing p4target (e.g. for p4target.errors) stays cheap.
    if name == "Switch":
        from p4target.runtime.switch import Switch

        return Switch
    raise AttributeError(f"module 'p4target' has no attribute {name!r}")
