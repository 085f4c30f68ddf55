"""Mininet topologies and the Mininet helpers that build and tear them down.

Mininet's log module, on import, makes every logger created after it one of its own
class, with a console handler of its own and a fixed level: a module imported later
(the embedded target's compiler, for one) would then print its messages twice and
drop its debug messages whatever the configuration. Every Mininet import of the
project goes through this package, so the standard class is put back here, once,
right after Mininet's "mininet" logger exists.
"""

import logging

import mininet.log  # noqa: F401 - made first, so that its "mininet" logger is Mininet's own

logging.setLoggerClass(logging.Logger)
