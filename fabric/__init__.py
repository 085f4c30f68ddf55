"""The MRC fabric as a model: topology, address plan, links and paths, entries, sizing.

Pure: no I/O beyond reading a topology file (or the topology named by a running
network's state file), no command line (no typer, no rich: those are cli_common's and
the commands'), and no import of any other package of this project. The controller,
the Mininet network, the endpoints and the experiments all build on it.
"""
