"""zfs-advisor: a tuning advisor and Prometheus exporter for OpenZFS."""

__version__ = "0.1.0"
