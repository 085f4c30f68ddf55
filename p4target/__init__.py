"""Embedded P4_16 v1model target: runs the project's .p4 files without BMv2."""
