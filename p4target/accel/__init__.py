"""The target's optional speed machinery: everything here makes things faster, nothing
here changes what they do.

- ``native``: builds Cython + C extension modules into a cache and loads them (the
  compiled fast path of a P4 program, ``NativeFastPath``).
- ``write_path``: the P4Runtime write path (``p4target.p4runtime.write``) compiled.
- ``h2_server``: a gRPC server on nghttp2 (``h2_loop.pyx``) for the P4Runtime server.

The rest of ``p4target`` asks for each part explicitly, where it is used
(``p4target.compiler.CompiledProgram.native_fast_path``,
``p4target.p4runtime.write_choice``, ``p4target.p4runtime.transports``), and takes
the plain Python path, or ``grpc.server``, when this package is absent, a part is
not built, or ``P4TARGET_NATIVE=0``. Nothing here hooks the import system.
"""
