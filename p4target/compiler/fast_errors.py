"""``NoFast``, raised by the fast path's generator (``fast_compiler`` and its parts)
for a construct it does not generate: the program then keeps only the general path.
It lives apart so that every module of the generator raises it without importing
``fast_compiler``, which imports them all.
"""

from __future__ import annotations


class NoFast(Exception):
    """The program uses something the fast path does not handle: no ``fast``."""
