"""Golden-file tier: the whole /metrics output, promtool, a real Prometheus (a package, so its conftest
never shadows tests/conftest.py for `from conftest import ...`)."""
