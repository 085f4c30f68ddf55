"""The MRC-lite transport and its RoCEv2 RC baseline: wire codecs, sender and receiver
as state machines without sockets or clocks, the socket and clock layer, and
``mrc-send``/``mrc-recv`` (run in Mininet hosts or on any Linux host)."""
