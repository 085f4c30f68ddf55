"""The controller's two one-line errors: an entry that does not fit, a switch that failed.

Why apart: the codec (controller/codec.py) raises EntryError, the pipeline
(controller/pipeline.py) and the session (controller/p4rt.py) raise SwitchError, and
``mrcctl`` (controller/cli.py) reports both as one line; each module imports them from
here without importing the others.
"""

from __future__ import annotations


class SwitchError(RuntimeError):
    """One switch failed; ``str()`` is one line naming the switch and its address."""


class EntryError(ValueError):
    """An entry that does not fit the P4Info (unknown name, value too wide, ...)."""
