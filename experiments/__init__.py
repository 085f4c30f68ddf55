"""The end-to-end experiments on the Mininet fabric: MRC-lite's spraying, failures,
trimming, loss and reordering, incast and workloads, against TCP, per-flow ECMP and the
RoCEv2 baseline (docs/experiments.md). One script each, on common.py
(``python -m experiments.<name> --help``); ``make experiments`` runs them all."""
