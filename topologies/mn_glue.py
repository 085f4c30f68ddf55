"""The fabric's classes for Mininet's ``mn`` command line (topologies/mn_custom.py).

Why a CLI wrapper: ``mn`` builds and starts the network itself, so the state file that
the controller and ``mrcctl`` read (network.json) is written when its CLI opens, and
removed when the CLI closes (the network stops right after).
"""

from __future__ import annotations

from typing import Any

from topologies.clos import mrcclos
from topologies.p4switch import Bmv2Switch, EmbeddedP4Switch, switch_class

topos = {"mrcclos": mrcclos}
# Mininet makes `--switch NAME,key=value` a subclass of the class, so these are classes.
switches = {"p4": switch_class("auto"), "p4embedded": EmbeddedP4Switch, "p4bmv2": Bmv2Switch}


def CLI(net: Any, **kwargs: Any) -> None:  # the name Mininet's `mn` looks for
    """Mininet's CLI with the project's commands, on the network `mn` started."""
    from topologies.cli import FabricCLI
    from topologies.fabric_net import attach, remove_state

    topo = net.topo
    p4 = [s for s in net.switches if hasattr(s, "run_dir")]
    if not hasattr(topo, "topology") or not p4:
        from mininet.cli import CLI as MininetCLI

        MininetCLI(net, **kwargs)
        return
    run_dir = p4[0].run_dir
    fn = attach(net, topo.topology, topo.names, run_dir)
    try:
        FabricCLI(fn, **kwargs)
    finally:
        remove_state(run_dir)
        type(p4[0]).batchShutdown(p4)  # before `mn` deletes the links under the running switches
