"""Errors the target reports to people and to the P4Runtime server.

Every error a user can cause (bad source, bad entry, bad command line) is one of
these, so callers print one line and exit non-zero instead of a traceback.
"""

from __future__ import annotations


class P4Error(Exception):
    """A problem with a P4 program or a request, described for a person.

    ``location`` is ``file:line:col`` when the problem is in source code.
    """

    def __init__(self, message: str, location: str | None = None) -> None:
        self.message = message
        self.location = location
        super().__init__(f"{location}: error: {message}" if location else message)


class UnsupportedError(P4Error):
    """A valid P4_16 construct that the embedded target does not implement."""


class EntryError(P4Error):
    """A control-plane request the switch refused; nothing of it was applied.

    ``kind`` is one of: invalid, exists, not_found, full, const, unimplemented,
    precondition, out_of_range. The P4Runtime server maps it to a canonical code.
    """

    def __init__(self, kind: str, message: str) -> None:
        self.kind = kind
        super().__init__(message)
