"""The one way the rest of ``p4target`` reaches its optional speed machinery
(``p4target/accel/``): ask for a part by name, get None when the package is not there.

Why a lookup and not an import: deleting ``p4target/accel/`` must change speed, never
behaviour, so every caller has a plain path for None. Only the package's absence
gives None; a part that is there but fails to import raises, as any bug would.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # a type for the callers' annotations; at run time a part is looked up (part)
    from p4target.accel.native import NativeFastPath as NativeFastPath

PACKAGE = "p4target.accel"
FOLDER = Path(__file__).with_name("accel")


def present() -> bool:
    """Whether ``p4target/accel/`` is there, in the folder this ``p4target`` is in (a
    look at the folder, not an import search: an editable install's finder would
    otherwise answer from the tree it was installed from)."""
    return (FOLDER / "__init__.py").is_file()


def part(name: str) -> ModuleType | None:
    """``p4target.accel.<name>`` (``native``, ``write_path``, ``h2_server``), or None
    when ``p4target/accel/`` is absent."""
    if not present():
        return None
    return importlib.import_module(f"{PACKAGE}.{name}")
