"""What measurements say, as plain data: probe evidence per parameter (parameters.py), a pool's
efficiency report (efficiency.py) and the intervals of their repeats (interval.py).

Below the engine and the store: nothing here reads a database, a host or a probe; the store's
readers (advisor/probe/evidence.py, advisor/probe/efficiency_stored.py) build these from rows.
"""
