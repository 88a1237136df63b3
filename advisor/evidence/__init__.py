"""What measurements say, as plain data: probe evidence per parameter (parameters.py), a pool's
efficiency report (efficiency.py) and the intervals of their repeats (interval.py).

Below the engine and the store: nothing here reads a database, a host or a probe; the store's
readers (advisor/store/probe_evidence.py, advisor/store/efficiency_reports.py) build these from rows.
"""
