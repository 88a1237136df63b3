"""Probe benchmarks: short fio runs of a workload's job in a scratch dataset, one per candidate
setting, on an idle healthy pool; results go to the store (advisor/store) and become evidence."""
