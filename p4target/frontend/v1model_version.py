"""The v1model version a program asks for (``#define V1MODEL_VERSION`` before the include).

The target's ``v1model.p4`` declares ``const bit<32> __v1model_version = V1MODEL_VERSION;``
as p4c's does. p4c accepts a version that is a non-negative integer literal between
the first published v1model (20180101) and the latest (20200408), and rejects any
other with the error placed at the constant's initializer; so does the target.
"""

from __future__ import annotations

from p4target.frontend import ast as A
from p4target.frontend.source import error

VERSION_CONSTANT = "__v1model_version"
FIRST_VERSION = 20180101
LATEST_VERSION = 20200408


def check_v1model_version(program: A.Program) -> None:
    """Raise the P4Error p4c gives when ``__v1model_version`` is not a known version."""
    for d in program.decls:
        if isinstance(d, A.ConstDecl) and d.name == VERSION_CONSTANT:
            value = d.value
            if not isinstance(value, A.IntLit) or value.value < 0:
                raise error(value.loc, f"{VERSION_CONSTANT}: expected v1model version to be a non-negative "
                            f"integer literal; #define V1MODEL_VERSION {LATEST_VERSION} (or leave it out)")
            if not FIRST_VERSION <= value.value <= LATEST_VERSION:
                raise error(value.loc, f"{value.value}: unknown v1model version; initial supported version is "
                            f"{FIRST_VERSION}, latest is {LATEST_VERSION}; #define V1MODEL_VERSION as one in that range")
