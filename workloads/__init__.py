"""Workloads on the Mininet fabric: collectives and traffic matrices run as jobs, with
per-iteration, per-step and per-flow figures (docs/workloads.md)."""
