"""P4Runtime v1.4 server for the embedded target (``P4RuntimeServer`` in ``server``)."""

from p4target.compiled_modules import install

install()  # before any module of the write path is imported: compiled copies when built
