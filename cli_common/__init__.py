"""What the project's command lines share: the options every command takes alike
(``options.py``: ``--topology``, the shape options, ``--run-dir``, ``--target``,
``--prefix``, the time and address checks) and the runner that says a usage mistake in
one ``error:`` line (``command.py``).

Why a package of its own: the fabric model (``fabric``) stays free of typer and rich,
and every command line (``mrcctl``, ``mrc-send``/``mrc-recv``, the Mininet runner,
``mrc-workload``, the experiments) may import this one, which imports nothing of the
project but the model (the resolver's ``Shape``).
"""
