"""Runner for p4c's STF ("simple test framework") files against the embedded target.

p4c's own tests describe a run as a text file: table entries to add, packets to send
in, packets expected out. Running the same files here checks the embedded target the
way p4c checks BMv2, and lets the project write its own packet tests in a format that
real BMv2 understands too (``p4c/backends/bmv2/run-bmv2-test.py``).

Statements, one per line (``#`` starts a comment; keywords are case-insensitive):

- ``add TABLE [PRIORITY] KEY:VALUE ... ACTION(PARAM:VALUE, ...) [= NAME]``. Values
  are decimal, ``0x``/``0b``/``0o`` literals; ``*`` digits are wildcards for ternary
  keys (the written digits form the mask, as p4c's BMv2 runner does); ``VALUE/LEN``
  for LPM (without ``/LEN`` the prefix covers the non-``*`` bits); ``VALUE&&&MASK``
  and ``LOW->HIGH`` are accepted too (simple_switch_CLI's forms). Keys not written
  are wildcards (exact keys: 0, as in p4c's runner). A higher priority wins
  (STF priority p is P4Runtime priority p+1, since p4c's tests use 0); stack elements
  may be written ``name$N`` as p4c's runner allows.
  ``= NAME`` names the entry so ``check_counter DIRECT_COUNTER($NAME)`` can read it.
- ``setdefault TABLE ACTION(PARAM:VALUE, ...)``; ``remove all`` clears every table.
- ``packet PORT HEX...``; ``expect PORT HEX...[$]`` where ``*`` is a wildcard nibble,
  a trailing ``$`` forbids extra bytes, and ``expect PORT`` alone accepts any number of
  packets on that port. Expectations are compared at the end, per port, in any order
  within the port (``ordered=True`` compares in order as BMv2's runner does); a port
  that sends a packet nobody expected fails the test.
- ``wait`` (the target is synchronous: nothing to wait for).
- ``check_counter NAME(INDEX|$ENTRY) [packets|bytes] [==|!=|<|<=|>|>=] VALUE``.
- simple_switch_CLI pass-through commands: ``mc_mgrp_create G``,
  ``mc_node_create RID PORT...``, ``mc_node_update HANDLE PORT...``,
  ``mc_node_associate G HANDLE``, ``mirroring_add SESSION PORT``,
  ``mirroring_add_mc SESSION GROUP``, ``mirroring_delete SESSION``,
  ``mirroring_get SESSION``, ``counter_read NAME INDEX``,
  ``counter_write NAME INDEX PACKETS BYTES``, ``register_read NAME INDEX``,
  ``register_write NAME INDEX VALUE``, ``register_reset NAME``,
  ``meter_get_rates NAME INDEX``, ``meter_set_rates NAME INDEX RATE:BURST ...``,
  ``meter_array_set_rates NAME RATE:BURST ...`` (rates per microsecond, as the CLI).
- Extension of this runner: ``check_register NAME(INDEX) [OP] VALUE``.

Names may be written in full (``MyIngress.t``) or by a unique dot-separated suffix
(``t``), as p4c's runner allows.
"""

from p4target.stf.parser import StfCommand, parse_int, parse_stf_file, parse_stf_text, parse_wildcard
from p4target.stf.runner import StfResult, StfRunner, match_pattern, run_stf, run_stf_program

__all__ = ["StfCommand", "StfResult", "StfRunner", "match_pattern", "parse_int", "parse_stf_file",
           "parse_stf_text", "parse_wildcard", "run_stf", "run_stf_program"]
