"""Prometheus exporter: one collector module per source family, fresh metric families per scrape.

Each collector module registers its `collect(scrape)` with `@collector(name, after=...)`
(registry.py): a new source family is its module and nothing else. collector.py runs them all per
scrape, with self-metrics; exposition.py writes the text format; base.py, named.py (typed kstat
families) and ioclass.py (zpool iostat column labels) are shared parts. docs/metrics.md lists every
family, and the HELP of each names its source.
"""
