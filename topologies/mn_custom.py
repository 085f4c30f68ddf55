"""What Mininet's own command line needs: ``mn --custom topologies/mn_custom.py``.

    .venv/bin/python /usr/bin/mn --custom topologies/mn_custom.py \
        --topo mrcclos,planes=2,spines=1,leaves=2,hosts=1 --switch p4 --controller none

(``--topo mrcclos,file=topologies/x.yaml`` reads a topology file; ``--switch p4`` is
BMv2 when installed, else the embedded target; ``p4embedded``/``p4bmv2`` choose.) Run it with the project's
Python (.venv): the switches and the controller need its packages. The CLI is the
project's (topologies/cli.py): ``install`` has the controller program every switch,
then ``pingmatrix``, ``paths h1 h2``, ``fail``/``restore LINK``, ``counters``, ``watch``.

Mininet executes this file and copies every name it defines into its own globals,
so it defines only the names Mininet looks for: ``topos``, ``switches`` and ``CLI``.
"""

from topologies.mn_glue import CLI, switches, topos  # noqa: F401 - read by Mininet's `mn`
