"""The fabric's live view in a browser and its metrics for Prometheus (`mrcctl web`).

The drawing comes from the fabric model (``model.py``), a second's reading from the
switches' counters and the state file (``snapshot.py``, ``poller.py``), the EVs'
states from the events file (``events.py``); ``app.py`` serves the page, its stream
and ``/metrics`` (``metrics.py``), ``server.py`` runs it with uvicorn. docs/web.md.
"""
