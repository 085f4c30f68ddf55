"""The ssh options of every command the project runs on another server of a cluster.

Why one place: a cluster's switch nodes (topologies/cluster_ssh.py) and a cable cut on
a remote end (controller/cable_cuts.py) reach the same servers; both connect in batch
mode with a time limit and share one connection per server, so they name one
control path (tools/cleanup.py closes it; a test keeps the two equal).
"""

from __future__ import annotations

SSH_OPTIONS = ("-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-o", "ServerAliveInterval=5")
# the network's own commands share one connection per server (closed by topologies/cluster_ssh.py Server.close)
SHARED = ("-o", "ControlMaster=auto", "-o", "ControlPath=/tmp/mrc-ssh-%C", "-o", "ControlPersist=60")
