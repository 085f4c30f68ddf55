"""Developer tools kept beside the project (not installed): ``cleanup.py`` (``make clean``,
standard library only), ``ns_cluster.py`` (a cluster of "servers" on one machine:
network namespaces, each with its own sshd; standard library only) and ``soak.py`` (``make soak``)."""
