"""P4Runtime v1.4 server for the embedded target (``P4RuntimeServer`` in ``server``)."""
